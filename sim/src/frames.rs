//! Frames waiting at the port: what the SQs transmitted while the model was locked, handed to
//! the port (loopback or link) once it is not.
//!
//! All frames share one byte buffer, with the end of each frame recorded, and the buffers are
//! handed back to the model after use, so queuing a frame allocates nothing once they have
//! grown (a `Vec` per frame was a large share of a frame's cost).

/// A batch of frames.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Frames {
    /// True when no frame is queued.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Queues the frame `build` appends to the buffer it is given; when it fails, nothing it
    /// appended is kept.
    pub fn push_with<E>(
        &mut self,
        build: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.bytes.len();
        match build(&mut self.bytes) {
            Ok(()) => {
                self.ends.push(self.bytes.len());
                Ok(())
            }
            Err(e) => {
                self.bytes.truncate(start);
                Err(e)
            }
        }
    }

    /// Queues a copy of `frame`.
    #[cfg(test)]
    pub fn push(&mut self, frame: &[u8]) {
        let _ = self.push_with(|b| {
            b.extend_from_slice(frame);
            Ok::<(), ()>(())
        });
    }

    /// Bytes of all frames queued.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The last frame queued.
    pub fn last(&self) -> Option<&[u8]> {
        let end = *self.ends.last()?;
        let start = self.ends.len().checked_sub(2).map_or(0, |i| self.ends[i]);
        Some(&self.bytes[start..end])
    }

    /// Drops the last frame queued.
    pub fn pop(&mut self) {
        if self.ends.pop().is_some() {
            self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
        }
    }

    /// The frames, in the order they were queued.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(s, e)| &self.bytes[s..e])
    }

    /// Forgets every frame, keeping the buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_keep_their_bounds() {
        let mut f = Frames::default();
        assert!(f.is_empty());
        f.push(&[1, 2, 3]);
        f.push(&[]);
        assert_eq!(
            f.push_with(|b| {
                b.push(9);
                Err(())
            }),
            Err(())
        );
        f.push(&[4]);
        assert_eq!(f.last(), Some(&[4u8][..]));
        let all: Vec<&[u8]> = f.iter().collect();
        assert_eq!(all, vec![&[1u8, 2, 3][..], &[][..], &[4][..]]);
        f.pop();
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            vec![&[1u8, 2, 3][..], &[][..]]
        );
        f.clear();
        assert_eq!(f.iter().count(), 0);
    }
}
