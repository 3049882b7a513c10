//! Little-endian CDR of the two messages with long arrays (Features and Matches),
//! written a sequence at a time: serde's data model hands a CDR serializer one
//! element at a time, which costs more than all the rest of publishing a frame's
//! 2,000 keypoints. The bytes are those the generic encoding writes (a test compares
//! them with the `cdr` crate's).

use bytemuck::Pod;

use super::{Features, Header, Matches};

/// The encapsulation header of little-endian plain CDR.
const CDR_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// A payload being written; alignment counts from the byte after the encapsulation
/// header, as CDR's does.
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn with_capacity(payload: usize) -> Self {
        let mut bytes = Vec::with_capacity(CDR_LE.len() + payload + 64);
        bytes.extend_from_slice(&CDR_LE);
        Self { bytes }
    }

    fn align4(&mut self) {
        let offset = self.bytes.len() - CDR_LE.len();
        self.bytes
            .resize(self.bytes.len() + (4 - offset % 4) % 4, 0);
    }

    fn u32(&mut self, value: u32) {
        self.align4();
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// A sequence's (or string's) length, which CDR holds in 32 bits.
    fn length(&mut self, len: usize) -> Result<(), cdr::Error> {
        self.u32(u32::try_from(len).map_err(|_| cdr::Error::NumberOutOfRange)?);
        Ok(())
    }

    /// A string: its length with the terminating NUL, its bytes, the NUL.
    fn string(&mut self, text: &str) -> Result<(), cdr::Error> {
        self.length(text.len() + 1)?;
        self.bytes.extend_from_slice(text.as_bytes());
        self.bytes.push(0);
        Ok(())
    }

    fn header(&mut self, header: &Header) -> Result<(), cdr::Error> {
        self.u32(header.stamp.sec as u32);
        self.u32(header.stamp.nanosec);
        self.string(&header.frame_id)
    }

    /// A sequence of 4-byte values: on a little-endian host their bytes as they lie,
    /// one block copy; elsewhere value by value.
    fn words<T: Pod>(
        &mut self,
        values: &[T],
        le_bytes: impl Fn(T) -> [u8; 4],
    ) -> Result<(), cdr::Error> {
        self.length(values.len())?;
        if cfg!(target_endian = "little") {
            self.bytes.extend_from_slice(bytemuck::cast_slice(values));
        } else {
            self.bytes
                .extend(values.iter().flat_map(|&value| le_bytes(value)));
        }
        Ok(())
    }

    fn f32s(&mut self, values: &[f32]) -> Result<(), cdr::Error> {
        self.words(values, f32::to_le_bytes)
    }

    fn u32s(&mut self, values: &[u32]) -> Result<(), cdr::Error> {
        self.words(values, u32::to_le_bytes)
    }

    fn i32s(&mut self, values: &[i32]) -> Result<(), cdr::Error> {
        self.words(values, i32::to_le_bytes)
    }

    fn octets(&mut self, values: &[u8]) -> Result<(), cdr::Error> {
        self.length(values.len())?;
        self.bytes.extend_from_slice(values);
        Ok(())
    }
}

pub(super) fn features(message: &Features) -> Result<Vec<u8>, cdr::Error> {
    let m = message;
    let arrays = 4 * (m.x.len() + m.y.len() + m.size.len() + m.angle.len())
        + 4 * (m.response.len() + m.octave.len())
        + m.descriptors.len();
    let mut w = Writer::with_capacity(arrays);
    w.header(&m.header)?;
    w.u32(m.image_width);
    w.u32(m.image_height);
    w.string(&m.algorithm)?;
    for values in [&m.x, &m.y, &m.size, &m.angle, &m.response] {
        w.f32s(values)?;
    }
    w.i32s(&m.octave)?;
    w.string(&m.descriptor_type)?;
    w.u32(m.descriptor_size);
    w.octets(&m.descriptors)?;
    Ok(w.bytes)
}

pub(super) fn matches(message: &Matches) -> Result<Vec<u8>, cdr::Error> {
    let m = message;
    let mut w =
        Writer::with_capacity(4 * (m.query_idx.len() + m.train_idx.len() + m.distance.len()));
    w.header(&m.header)?;
    w.header(&m.train_header)?;
    w.string(&m.mode)?;
    w.u32s(&m.query_idx)?;
    w.u32s(&m.train_idx)?;
    w.f32s(&m.distance)?;
    Ok(w.bytes)
}
