//! What a request costs on a drive with a head (or a card without one): the arithmetic of the
//! seek-modelling drive profiles (`hdd-seek`, `sd-seek`), with no I/O and no clock, so the
//! tests check it exactly. The NBD server (`seekdisk`) charges each request what [`Model::cost`]
//! says; the figures and their sources are in docs/testbed.md ("Drive profiles").

/// A disk with one head: the seek curve from three datasheet figures, rotation, media rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Head {
    /// The drive modelled, bytes: a seek across all of it is the full stroke (the image lies
    /// at its start, as an installed system lies at the start of its disk).
    pub capacity: u64,
    pub rpm: f64,
    /// Single-track seek (datasheet, read), s.
    pub track_s: f64,
    /// Average seek over all seek lengths (datasheet, read), s.
    pub avg_s: f64,
    /// Full-stroke seek (datasheet, read), s.
    pub full_s: f64,
    /// Sustained media rate, bytes/s.
    pub rate: f64,
}

impl Head {
    /// One revolution, s.
    pub fn revolution_s(&self) -> f64 {
        60.0 / self.rpm
    }

    /// The exponent `p` of the seek curve `track + (full - track) * (d / capacity)^p`, chosen
    /// so the curve's mean over all seek lengths is the datasheet's average: datasheets
    /// average over every pair of start and end track (the "weighted average" formula of
    /// HGST's specifications), so seek length `u = d / capacity` has density `2 (1 - u)`, and
    /// the mean of `u^p` is `2 / ((p + 1)(p + 2))`. p = 0.5 is the textbook square root.
    pub fn exponent(&self) -> f64 {
        let share = ((self.avg_s - self.track_s) / (self.full_s - self.track_s)).clamp(1e-6, 1.0);
        // (p + 1)(p + 2) = 2 / share, the positive root.
        let c = 2.0 - 2.0 / share;
        (-3.0 + (9.0 - 4.0 * c).sqrt()) / 2.0
    }

    /// The seek over `d` bytes, s (0 for none).
    pub fn seek_s(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let u = (d as f64 / self.capacity as f64).min(1.0);
        self.track_s + (self.full_s - self.track_s) * u.powf(self.exponent())
    }

    /// A request at `off` of `len` bytes with the head where the last one ended (`pos`), s:
    /// a request that continues the last one pays only the transfer; a short skip forward
    /// pays the time the gap takes to pass under the head, when that is less than a seek
    /// and half a turn (the drive reads on into its buffer meanwhile: this is why reading a
    /// few unused pages costs less than a request); anything else pays the seek and, on
    /// average, half a revolution before its first sector comes round.
    pub fn cost_s(&self, pos: u64, off: u64, len: u64) -> f64 {
        let transfer = len as f64 / self.rate;
        if off == pos {
            return transfer;
        }
        let d = off.abs_diff(pos);
        let reposition = self.seek_s(d) + self.revolution_s() / 2.0;
        let position = if off > pos {
            (d as f64 / self.rate).min(reposition)
        } else {
            reposition
        };
        position + transfer
    }
}

/// A card without a head: a fixed cost per request that does not continue the last one (the
/// card's translation layer finds the block), and a transfer rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Flash {
    /// The card modelled, bytes (`seekcheck` reads over all of it).
    pub capacity: u64,
    /// Cost of a request that does not continue the last one, s.
    pub access_s: f64,
    /// Sequential read rate, bytes/s.
    pub rate: f64,
}

impl Flash {
    pub fn cost_s(&self, pos: u64, off: u64, len: u64) -> f64 {
        let access = if off == pos { 0.0 } else { self.access_s };
        access + len as f64 / self.rate
    }
}

/// A drive the NBD server can model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    Head(Head),
    Flash(Flash),
    /// Every request free: the protocol tests' drive, and `seekcheck`'s measure of the
    /// host's own time per request.
    Zero,
}

impl Model {
    /// What a request at `off` of `len` bytes costs after one that ended at `pos`, s. Reads
    /// and writes cost the same (the write cache is not modelled: a boot writes little).
    pub fn cost_s(&self, pos: u64, off: u64, len: u64) -> f64 {
        match self {
            Model::Head(h) => h.cost_s(pos, off, len),
            Model::Flash(f) => f.cost_s(pos, off, len),
            Model::Zero => 0.0,
        }
    }

    /// The modelled drive's size, bytes (None: the file's).
    pub fn capacity(&self) -> Option<u64> {
        match self {
            Model::Head(h) => Some(h.capacity),
            Model::Flash(f) => Some(f.capacity),
            Model::Zero => None,
        }
    }

    /// The sequential rate, bytes/s (None: unlimited).
    pub fn rate(&self) -> Option<f64> {
        match self {
            Model::Head(h) => Some(h.rate),
            Model::Flash(f) => Some(f.rate),
            Model::Zero => None,
        }
    }

    /// The same drive `k` times slower in every respect: each seek, turn and access takes
    /// `k` times as long, the rate is `k` times lower (the time-scaled profiles: a drive as
    /// slow beside the emulated CPU as the real drive is beside the host's CPU).
    pub fn slowed(self, k: f64) -> Model {
        match self {
            Model::Head(h) => Model::Head(Head {
                rpm: h.rpm / k,
                track_s: h.track_s * k,
                avg_s: h.avg_s * k,
                full_s: h.full_s * k,
                rate: h.rate / k,
                ..h
            }),
            Model::Flash(f) => Model::Flash(Flash {
                access_s: f.access_s * k,
                rate: f.rate / k,
                ..f
            }),
            Model::Zero => Model::Zero,
        }
    }

    /// Whether the drive has a head (the NBD export says so: `NBD_FLAG_ROTATIONAL`).
    pub fn rotational(&self) -> bool {
        matches!(self, Model::Head(_))
    }
}

/// A 5400 rpm 2.5" laptop disk: HGST Travelstar 5K320 (320 GB), its OEM specification's read
/// figures; the media rate is an estimate (docs/testbed.md, "Drive profiles").
pub const LAPTOP_5400: Head = Head {
    capacity: 320_000_000_000,
    rpm: 5400.0,
    track_s: 0.001,
    avg_s: 0.012,
    full_s: 0.020,
    rate: 70_000_000.0,
};

/// A class-10 microSD card (SanDisk Ultra 16 GB) in a Raspberry Pi 4's reader: 42.3 MB/s
/// sequential, 6.57 MB/s in 4 KiB random reads (docs/testbed.md, "Drive profiles").
pub const SD_CLASS10: Flash = Flash {
    capacity: 16_000_000_000,
    // 4096 B / 6.57 MB/s = 623 us per random 4 KiB read, of which 97 us is the transfer.
    access_s: 4096.0 / 6_570_000.0 - 4096.0 / 42_300_000.0,
    rate: 42_300_000.0,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slowed_drive_costs_k_times_as_much_for_every_request() {
        let k = 7.5;
        for m in [Model::Head(LAPTOP_5400), Model::Flash(SD_CLASS10)] {
            let s = m.slowed(k);
            // Continuing, a short skip forward, a long seek back, a random access.
            for (pos, off, len) in [
                (0, 0, 1 << 20),
                (4096, 65536, 4096),
                (1 << 30, 0, 4096),
                (0, 100_000_000_000, 65536),
            ] {
                let (a, b) = (m.cost_s(pos, off, len), s.cost_s(pos, off, len));
                assert!(
                    close(b, a * k, 1e-12),
                    "{m:?} {pos} {off} {len}: {a} -> {b}"
                );
            }
            assert_eq!(s.rate().unwrap() * k, m.rate().unwrap());
            assert_eq!(
                (s.capacity(), s.rotational()),
                (m.capacity(), m.rotational())
            );
        }
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn the_seek_curve_meets_the_datasheet() {
        let h = LAPTOP_5400;
        assert_eq!(h.seek_s(0), 0.0);
        // One track (a 320 GB disk has ~150k tracks a surface: ~2 MB a cylinder).
        assert!(
            close(h.seek_s(4096), h.track_s, 0.0002),
            "{}",
            h.seek_s(4096)
        );
        assert!(close(h.seek_s(h.capacity), h.full_s, 1e-12));
        // Beyond the disk is a full stroke, not more.
        assert!(close(h.seek_s(2 * h.capacity), h.full_s, 1e-12));
        // The mean over all pairs of positions (density 2(1-u)) is the datasheet's average.
        let n = 200_000;
        let mut sum = 0.0;
        let mut weight = 0.0;
        for i in 0..n {
            let u = (i as f64 + 0.5) / n as f64;
            let w = 2.0 * (1.0 - u);
            sum += w * h.seek_s((u * h.capacity as f64) as u64);
            weight += w;
        }
        assert!(close(sum / weight, h.avg_s, 0.00005), "{}", sum / weight);
        // Monotonic in the distance.
        let mut last = 0.0;
        for k in 0..40 {
            let s = h.seek_s(1 << k);
            assert!(s >= last);
            last = s;
        }
        // 2 / ((p+1)(p+2)) = share; the square root when the average sits at 8/15.
        let mut sq = h;
        sq.avg_s = sq.track_s + (sq.full_s - sq.track_s) * 8.0 / 15.0;
        assert!(close(sq.exponent(), 0.5, 1e-9), "{}", sq.exponent());
    }

    #[test]
    fn what_a_request_costs_on_a_head() {
        let h = LAPTOP_5400;
        let rev = 60.0 / 5400.0;
        // Continuing: the transfer only.
        assert!(close(
            h.cost_s(8192, 8192, 1 << 20),
            (1 << 20) as f64 / 70e6,
            1e-12
        ));
        // A 4 KiB skip forward: the gap passes under the head (58.5 us), no seek.
        let c = h.cost_s(0, 4096, 4096);
        assert!(close(c, 8192.0 / 70e6, 1e-12), "{c}");
        // The same skip backward: a seek and half a turn.
        let c = h.cost_s(8192, 0, 4096);
        assert!(close(c, h.seek_s(8192) + rev / 2.0 + 4096.0 / 70e6, 1e-12));
        // A long skip forward is a seek, not a wait: 100 MB would pass in 1.4 s.
        let c = h.cost_s(0, 100_000_000, 4096);
        assert!(close(
            c,
            h.seek_s(100_000_000) + rev / 2.0 + 4096.0 / 70e6,
            1e-12
        ));
        // The break-even gap: about 0.45 MB (6.5 ms of media at 70 MB/s).
        let small = h.cost_s(0, 400_000, 0);
        let large = h.cost_s(0, 500_000, 0);
        assert!(close(small, 400_000.0 / 70e6, 1e-12));
        assert!(close(large, h.seek_s(500_000) + rev / 2.0, 1e-12));
        // A random 4 KiB read over the whole disk: avg seek + half a turn + transfer, ~57/s.
        let random = h.avg_s + rev / 2.0 + 4096.0 / 70e6;
        assert!(close(1.0 / random, 56.7, 0.2), "{}", 1.0 / random);
    }

    #[test]
    fn what_a_request_costs_on_a_card() {
        let f = SD_CLASS10;
        // Random 4 KiB reads at the published 6.57 MB/s, sequential at 42.3 MB/s.
        let random = f.cost_s(0, 1 << 30, 4096);
        assert!(close(4096.0 / random, 6.57e6, 1.0), "{}", 4096.0 / random);
        let seq = f.cost_s(1 << 20, 1 << 20, 1 << 20);
        assert!(close((1 << 20) as f64 / seq, 42.3e6, 1.0));
        // No head: any jump costs the same.
        assert_eq!(f.cost_s(0, 4096, 4096), f.cost_s(0, 1 << 33, 4096));
        assert_eq!(Model::Zero.cost_s(0, 1 << 33, 1 << 20), 0.0);
        assert!(Model::Head(LAPTOP_5400).rotational() && !Model::Flash(f).rotational());
    }
}
