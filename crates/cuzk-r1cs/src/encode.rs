//! The byte encoding of a segment's constraints.
//!
//! A segment is a run of constraints (rows). Each row is
//! `cursor_delta nA nB nC term*` where every number is a LEB128 varint and
//! each term is `code coeff`: `coeff` indexes the constraint system's
//! coefficient table, `code` is a variable in one of four forms (low two
//! bits):
//!
//! * [`AUX_REL`]: aux `cursor - v`, a variable of this segment allocated
//!   before the row (the *cursor* is the segment's aux count when the row
//!   was enforced, so recently allocated variables give small numbers);
//! * [`AUX_ABS`]: aux `v`, a variable allocated before the segment;
//! * [`IN_REL`]: input `input_base + v`, an input of this segment;
//! * [`IN_ABS`]: input `v` (ONE, or an input allocated before the segment).
//!
//! Relative forms make a repeated sub-circuit encode to the same bytes
//! wherever it sits.

pub(crate) const AUX_REL: u64 = 0;
pub(crate) const AUX_ABS: u64 = 1;
pub(crate) const IN_REL: u64 = 2;
pub(crate) const IN_ABS: u64 = 3;

/// Appends `v` as a LEB128 varint.
#[inline]
pub(crate) fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Reads a varint at `*pos`, advancing it; `None` past the end or on an
/// over-long number.
#[inline]
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Reads a varint known to be well formed (the segment was validated when
/// it was recorded or loaded).
#[inline(always)]
pub(crate) fn get_fast(buf: &[u8], pos: &mut usize) -> u64 {
    let b = buf[*pos];
    *pos += 1;
    if b < 0x80 {
        return u64::from(b);
    }
    let mut v = u64::from(b & 0x7f);
    let mut shift = 7;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A variable of a row, decoded against its segment instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Var {
    Aux(u64),
    Input(u64),
}

/// Decodes `code` for a row at aux `cursor` (absolute) in an instance whose
/// inputs start at `input_base`.
#[inline(always)]
pub(crate) fn var(code: u64, cursor: u64, input_base: u64) -> Var {
    let v = code >> 2;
    match code & 3 {
        AUX_REL => Var::Aux(cursor.wrapping_sub(v)),
        AUX_ABS => Var::Aux(v),
        IN_REL => Var::Input(input_base + v),
        _ => Var::Input(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_truncation() {
        let values = [0u64, 1, 127, 128, 300, 1 << 40, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put(&mut buf, v);
        }
        let (mut p, mut q) = (0, 0);
        for v in values {
            assert_eq!(get(&buf, &mut p), Some(v));
            assert_eq!(get_fast(&buf, &mut q), v);
        }
        assert_eq!(get(&buf, &mut p), None);
        let mut p = 0;
        assert_eq!(get(&[0x80, 0x80], &mut p), None);
    }
}
