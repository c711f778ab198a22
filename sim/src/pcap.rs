//! Captures of the port's traffic in the classic pcap file format (the one tcpdump writes with
//! `-w` and Wireshark, tshark and tcpdump `-r` read), so a test's frames can be read with the
//! usual tools. Start one with [`Device::capture`](crate::Device::capture).
//!
//! The format: a 24-byte file header (magic `0xa1b2c3d4` in the writer's byte order, version
//! 2.4, time zone 0, accuracy 0, snapshot length, link type 1 = Ethernet), then one record per
//! frame: seconds and microseconds since the Unix epoch, captured length, original length
//! (both without FCS, as the SQs build frames), and the bytes. This writer uses little-endian
//! headers, as x86 tcpdump does; readers detect the order from the magic.

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// The pcap magic number for microsecond timestamps.
pub const MAGIC: u32 = 0xa1b2_c3d4;
/// LINKTYPE_ETHERNET: records start with the destination MAC.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Longest frame kept whole; longer ones are cut (the record keeps the original length).
pub const SNAPLEN: u32 = 65_535;

/// Writes frames to `W` as a pcap stream.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    frames: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&MAGIC.to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0i32.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&SNAPLEN.to_le_bytes());
        header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter { out, frames: 0 })
    }

    /// Appends one frame, stamped with `at`.
    pub fn write_frame(&mut self, at: SystemTime, frame: &[u8]) -> io::Result<()> {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let kept = frame.len().min(SNAPLEN as usize);
        let mut record = [0u8; 16];
        // The format's seconds field is 32 bits wide (it runs out in 2106).
        record[0..4].copy_from_slice(&(since.as_secs() as u32).to_le_bytes());
        record[4..8].copy_from_slice(&since.subsec_micros().to_le_bytes());
        record[8..12].copy_from_slice(&(kept as u32).to_le_bytes());
        let original = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        record[12..16].copy_from_slice(&original.to_le_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(&frame[..kept])?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A running capture on a device's port: the writer, or the first error it returned (after
/// which nothing more is written, so a full disk never stalls the data path).
pub(crate) struct Capture {
    writer: PcapWriter<Box<dyn Write + Send>>,
    failed: Option<io::Error>,
}

impl Capture {
    pub(crate) fn new(out: Box<dyn Write + Send>) -> io::Result<Capture> {
        Ok(Capture {
            writer: PcapWriter::new(out)?,
            failed: None,
        })
    }

    /// Records one frame that crossed the port (either way).
    pub(crate) fn record(&mut self, frame: &[u8]) {
        if self.failed.is_none() {
            if let Err(e) = self.writer.write_frame(SystemTime::now(), frame) {
                self.failed = Some(e);
            }
        }
    }

    /// Ends the capture: the frames written, or the first error.
    pub(crate) fn finish(self) -> io::Result<u64> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let frames = self.writer.frames();
        self.writer.finish()?;
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn header_and_record_bytes() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let at = UNIX_EPOCH + Duration::new(0x0102_0304, 5_000);
        w.write_frame(at, &[0xaa; 3]).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(
            &bytes[..24],
            &[
                0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0
            ]
        );
        assert_eq!(
            &bytes[24..],
            &[4, 3, 2, 1, 5, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0xaa, 0xaa, 0xaa]
        );
    }

    #[test]
    fn long_frames_are_cut_to_the_snapshot_length() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_frame(UNIX_EPOCH, &vec![1; SNAPLEN as usize + 10])
            .unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 24 + 16 + SNAPLEN as usize);
        assert_eq!(&bytes[32..36], &SNAPLEN.to_le_bytes());
        assert_eq!(&bytes[36..40], &(SNAPLEN + 10).to_le_bytes());
    }

    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_writer_is_reported_at_the_end() {
        let mut c = Capture {
            writer: PcapWriter {
                out: Box::new(Full),
                frames: 0,
            },
            failed: None,
        };
        c.record(&[1, 2, 3]);
        c.record(&[1, 2, 3]);
        assert_eq!(c.finish().unwrap_err().kind(), io::ErrorKind::StorageFull);
    }
}
