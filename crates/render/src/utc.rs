//! Calendar time for the views that show one (a pack's age, a kept trace's date).

/// `YYYY-MM-DD HH:MM` (UTC) of seconds since the Unix epoch, before 1970 too: days to a
/// civil date by the usual era arithmetic (proleptic Gregorian; H. Hinnant's
/// `civil_from_days`, a public-domain description).
pub fn minutes(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(minutes(0), "1970-01-01 00:00");
        assert_eq!(minutes(951_782_400), "2000-02-29 00:00");
        assert_eq!(minutes(1_795_702_680), "2026-11-26 14:18");
        assert_eq!(minutes(-60), "1969-12-31 23:59");
    }
}
