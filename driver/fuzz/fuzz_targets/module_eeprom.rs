//! The module EEPROM decoders (SFF-8636, SFF-8472, CMIS) on images the fuzzer writes: the
//! first byte chooses the pages present (a bit each) and whether check codes are verified,
//! the rest fills the lower page and the upper pages in turn (missing bytes read as zero).
//! A panic, a read outside the 256-byte window, more reads than the decoders promise, or a
//! `Display` that fails is a finding; any typed error is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mlx5_driver::module::{
    read_module, DecodeOptions, EepromAddr, EepromImage, EepromReader, ModuleError,
};

/// Pages an image may have: (I2C address, bank, page).
const PAGES: [(u8, u8, u8); 8] = [
    (0x50, 0, 0x00),
    (0x50, 0, 0x01),
    (0x50, 0, 0x02),
    (0x50, 0, 0x03),
    (0x50, 0, 0x11),
    (0x50, 1, 0x11),
    (0x51, 0, 0x00),
    (0x50, 0, 0x10),
];

/// A reader that holds the decoders to their contract while passing reads on.
struct Checked<'a> {
    image: &'a mut EepromImage,
    reads: usize,
}

impl EepromReader for Checked<'_> {
    fn read(&mut self, at: EepromAddr, buf: &mut [u8]) -> Result<(), ModuleError> {
        assert!(
            buf.len() <= 128 && usize::from(at.offset) + buf.len() <= 256,
            "{at}: {} bytes",
            buf.len()
        );
        self.reads += 1;
        assert!(self.reads <= 40, "more reads than any module needs");
        self.image.read(at, buf)
    }
}

fn block(data: &mut &[u8]) -> [u8; 128] {
    let mut b = [0u8; 128];
    let n = data.len().min(128);
    b[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    b
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let mut image = EepromImage::new();
    image.set_lower(0x50, block(&mut rest));
    image.set_lower(0x51, block(&mut rest));
    for (i, &(i2c, bank, page)) in PAGES.iter().enumerate() {
        if first & (1 << i) != 0 {
            image.set_page(i2c, bank, page, block(&mut rest));
        }
    }
    let opts = DecodeOptions {
        verify_checksums: data.len() % 2 == 0,
    };
    let mut reader = Checked {
        image: &mut image,
        reads: 0,
    };
    if let Ok(module) = read_module(&mut reader, &opts) {
        let _ = module.to_string();
    }
});
