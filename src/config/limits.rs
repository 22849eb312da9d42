//! The resource governor's options (`--max-memory`, `--cpu-target`):
//! sizes and percentages.

use super::Limits;
use crate::fetch::governor::GovernorConfig;

/// The governor's settings; neither option given: no governor.
pub(super) fn governor_config(o: &Limits) -> GovernorConfig {
    GovernorConfig { max_memory: o.max_memory.map(|s| s.0), cpu_target: o.cpu_target.map(|p| p.0) }
}

/// Least `--max-memory`: below it, a crawler's own runtime would not fit.
const MIN_MEMORY: u64 = 16 << 20;

/// Parses a memory size: `512M`, `2G`, `1.5GiB`, `300MB`, `65536K`, or a
/// bare number of bytes. K, M, G and T are powers of 1024 with or without
/// `B` or `iB` (as `free -h` and `ps` count); case does not matter.
///
/// # Errors
/// A message naming the value and the accepted forms, or the range.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let forms = "use e.g. 512M, 2G, 1.5GiB";
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a size; {forms}"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("{s:?}: unknown unit; {forms} (K, M, G, T: powers of 1024)")),
    };
    #[allow(clippy::cast_precision_loss)]
    let bytes = n * (1u64 << shift) as f64;
    #[allow(clippy::cast_precision_loss)]
    if !bytes.is_finite() || bytes < MIN_MEMORY as f64 || bytes > (1u64 << 50) as f64 {
        return Err(format!("{s:?} is out of range; allowed 16M to 1024T"));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(bytes as u64)
}

/// Parses a percentage of all cores, 1 to 100, with or without `%`.
///
/// # Errors
/// A message naming the value and the range.
pub fn parse_percent(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<u8>() {
        Ok(n @ 1..=100) => Ok(n),
        _ => Err(format!("{s:?} is not a percentage of all cores; allowed 1 to 100")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("300mb"), Ok(300 << 20));
        assert_eq!(parse_size(" 65536 K "), Ok(64 << 20));
        assert_eq!(parse_size("1t"), Ok(1 << 40));
        assert_eq!(parse_size("134217728"), Ok(128 << 20));
    }

    #[test]
    fn bad_sizes_are_named() {
        for (v, says) in [
            ("lots", "not a size"),
            ("", "not a size"),
            ("2X", "unknown unit"),
            ("5M", "out of range"),
            ("-1G", "not a size"),
            ("9999999T", "out of range"),
        ] {
            let e = parse_size(v).expect_err(v);
            assert!(e.contains(says) && e.contains(&format!("{v:?}")), "{v}: {e}");
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("80"), Ok(80));
        assert_eq!(parse_percent("50%"), Ok(50));
        assert_eq!(parse_percent("100"), Ok(100));
        for v in ["0", "101", "-5", "half", "12.5"] {
            let e = parse_percent(v).expect_err(v);
            assert!(e.contains("1 to 100") && e.contains(&format!("{v:?}")), "{v}: {e}");
        }
    }
}
