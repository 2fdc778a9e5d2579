//! Write amplification: device bytes written over a denominator, with one
//! rule for when it was not measured (no device under the data, nothing
//! reached the device yet, no denominator), so that is never printed as
//! 0. iolab has three, each named by its denominator wherever it is shown:
//! kv bytes written (kv phases), what a server says it wrote (servers'
//! points), the rows' SQL bytes (oltp's load).

use super::diskstats::DeviceStats;

/// The kv phase's: key and value bytes the workload wrote.
pub const PER_KV_BYTES: &str = "write amp (device bytes / kv bytes written)";
/// A private server's: the bytes the server reports it wrote.
pub const PER_SERVER_BYTES: &str = "write amp (device bytes / server-reported bytes written)";
/// oltp's load: the rows as the SQL text of the INSERTs sent.
pub const PER_ROW_BYTES: &str = "write amp (device bytes / row SQL bytes loaded)";

/// Why a write amplification is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotMeasured {
    /// No /proc/diskstats device under the data (or not this machine's).
    NoDevice,
    /// The device wrote nothing over the phase: the data is still in the
    /// page cache (or was deleted before writeback).
    NothingOnDevice,
    /// The denominator is missing or 0.
    NoDenominator,
}

impl NotMeasured {
    pub fn words(self) -> &'static str {
        match self {
            NotMeasured::NoDevice => "no device under the data to read /proc/diskstats of",
            NotMeasured::NothingOnDevice => {
                "nothing reached the device yet (the writes are still in the page cache)"
            }
            NotMeasured::NoDenominator => "no bytes written to divide by",
        }
    }
}

/// Device bytes written / `denominator`, or why it was not measured.
pub fn ratio(device: Option<&DeviceStats>, denominator: Option<u64>) -> Result<f64, NotMeasured> {
    let d = device.ok_or(NotMeasured::NoDevice)?;
    let n = denominator
        .filter(|&b| b > 0)
        .ok_or(NotMeasured::NoDenominator)?;
    if d.write_bytes == 0 {
        return Err(NotMeasured::NothingOnDevice);
    }
    Ok(d.write_bytes as f64 / n as f64)
}

/// Whose bytes a device's counters are: /proc/diskstats counts every
/// writer of the device, not only iolab's database.
pub fn whole_device(device: &str) -> String {
    format!("{device} (whole device, all processes)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(write_bytes: u64) -> DeviceStats {
        DeviceStats {
            device: "vda".into(),
            write_bytes,
            ..Default::default()
        }
    }

    /// Issue 44 item 7: a phase whose writes had not reached the device
    /// printed `write amp (dev / kv bytes) 0.00`.
    #[test]
    fn nothing_on_the_device_is_not_measured_not_zero() {
        assert_eq!(
            ratio(Some(&dev(0)), Some(4000)),
            Err(NotMeasured::NothingOnDevice)
        );
        assert_eq!(ratio(None, Some(4000)), Err(NotMeasured::NoDevice));
        assert_eq!(
            ratio(Some(&dev(8000)), Some(0)),
            Err(NotMeasured::NoDenominator)
        );
        assert_eq!(ratio(Some(&dev(8000)), Some(4000)), Ok(2.0));
    }

    #[test]
    fn the_three_are_named_by_their_denominators() {
        let names = [PER_KV_BYTES, PER_SERVER_BYTES, PER_ROW_BYTES];
        for (i, a) in names.iter().enumerate() {
            assert!(a.starts_with("write amp (device bytes / "), "{a}");
            assert!(names[i + 1..].iter().all(|b| b != a));
        }
    }
}
