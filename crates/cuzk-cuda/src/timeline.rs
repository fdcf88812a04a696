//! The GPU's busy share: where the kernel regions since the last mark lie
//! on the GPU's clock.

/// Where the kernel regions since the last mark lie on the GPU's clock
/// (ms after the epoch event), and their total length.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Begin of the first region and end of the last one.
    pub first_begin_ms: Option<f64>,
    pub last_end_ms: Option<f64>,
    /// Sum of the regions' lengths.
    pub busy_ms: f64,
}

impl Timeline {
    /// Busy time over the span from the first region's begin to the last
    /// one's end, both by CUDA events (None before any region).
    pub fn busy_share(&self) -> Option<f64> {
        let span = self.last_end_ms? - self.first_begin_ms?;
        (span > 0.0).then(|| self.busy_ms / span)
    }
}

#[cfg(test)]
mod tests {
    use super::Timeline;

    #[test]
    fn the_busy_share_is_over_the_gpu_span() {
        assert_eq!(Timeline::default().busy_share(), None);
        let t = Timeline {
            first_begin_ms: Some(100.0),
            last_end_ms: Some(1100.0),
            busy_ms: 950.0,
        };
        assert_eq!(t.busy_share(), Some(0.95));
    }
}
