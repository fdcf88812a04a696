//! Density bitmaps: which variables appear in a query.
//!
//! Groth16's A and B queries only hold SRS points for variables that occur
//! (with a nonzero coefficient) in some constraint's A (resp. B) linear
//! combination; the prover walks the assignment and takes the next point for
//! each set bit. [`Density`] is that bitmap plus its population count.

/// A growable bitmap with a running count of set bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    count: usize,
}

impl Density {
    pub fn new() -> Density {
        Density::default()
    }

    /// A bitmap of `len` bits, all set.
    pub fn full(len: usize) -> Density {
        let mut d = Density {
            words: vec![u64::MAX; len.div_ceil(64)],
            len,
            count: len,
        };
        d.clear_tail();
        d
    }

    /// A bitmap of `len` bits, all clear.
    pub fn zeroed(len: usize) -> Density {
        Density {
            words: vec![0; len.div_ceil(64)],
            len,
            count: 0,
        }
    }

    /// The bitmap of `len` bits held in `words` (as [`Density::words`]
    /// gives them); `None` when the word count does not fit `len` or a bit
    /// past `len` is set.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Density> {
        if words.len() != len.div_ceil(64) {
            return None;
        }
        let mut d = Density {
            words,
            len,
            count: 0,
        };
        let before: u64 = d.words.iter().map(|w| u64::from(w.count_ones())).sum();
        d.clear_tail();
        let count: u64 = d.words.iter().map(|w| u64::from(w.count_ones())).sum();
        (count == before).then(|| {
            d.count = count as usize;
            d
        })
    }

    fn clear_tail(&mut self) {
        let rem = self.len % 64;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Makes room for `bits` more bits.
    pub fn reserve(&mut self, bits: usize) {
        self.words.reserve(bits.div_ceil(64));
    }

    /// Appends a clear bit.
    pub fn push(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Sets bit `i` (which must exist).
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        let w = &mut self.words[i / 64];
        let m = 1u64 << (i % 64);
        if *w & m == 0 {
            *w |= m;
            self.count += 1;
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Appends `other`'s bits. With `merge_first`, `other`'s bit 0 is OR-ed
    /// into this bitmap's bit 0 instead of being appended: a sub-circuit's
    /// own ONE input is the parent's ONE input.
    pub fn extend(&mut self, other: &Density, merge_first: bool) {
        let mut start = 0;
        if merge_first && !other.is_empty() && !self.is_empty() {
            if other.get(0) {
                self.set(0);
            }
            start = 1;
        }
        for i in start..other.len {
            // Word-at-a-time would be faster; extension happens once per
            // sub-circuit, so bit-at-a-time over set words is enough.
            let bit = other.words[i / 64] >> (i % 64) & 1 == 1;
            self.push();
            if bit {
                let j = self.len - 1;
                self.words[j / 64] |= 1u64 << (j % 64);
                self.count += 1;
            }
        }
    }

    /// The bitmap as 64-bit words, bit `i` at bit `i % 64` of word `i / 64`;
    /// bits past [`Density::len`] are clear.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Iterates over the bits.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(move |i| self.words[i / 64] >> (i % 64) & 1 == 1)
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_set_count() {
        let mut d = Density::new();
        for _ in 0..130 {
            d.push();
        }
        d.set(0);
        d.set(64);
        d.set(129);
        d.set(64);
        assert_eq!(d.count(), 3);
        assert!(d.get(129) && !d.get(128) && !d.get(500));
        assert_eq!(d.iter().filter(|b| *b).count(), 3);
    }

    #[test]
    fn extend_merges_the_one_input() {
        let mut a = Density::new();
        a.push();
        a.push();
        a.set(1);
        let mut b = Density::new();
        b.push();
        b.push();
        b.set(0);
        b.set(1);
        let mut plain = a.clone();
        plain.extend(&b, false);
        assert_eq!(plain.iter().collect::<Vec<_>>(), [false, true, true, true]);
        assert_eq!(plain.count(), 3);
        a.extend(&b, true);
        assert_eq!(a.iter().collect::<Vec<_>>(), [true, true, true]);
        assert_eq!(a.count(), 3);
    }

    #[test]
    fn full_bitmap() {
        let d = Density::full(70);
        assert_eq!(d.count(), 70);
        assert!(d.get(69) && !d.get(70));
    }
}
