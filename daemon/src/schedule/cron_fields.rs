//! What is wrong with a cron expression, field by field, in our own words
//! (`docs/schedules.md`): a number outside its field's range, a step of 0, a name
//! that is not a month's or a day's. `croner` parses what passes; this only finds
//! the faults a person makes most, so that a refusal names the field and the value.

/// The fields of a six-field expression, in order, with the numbers each takes; a
/// five-field expression has no seconds.
const FIELDS: [(&str, u32, u32); 6] = [
    ("second", 0, 59),
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
];

/// The names a month field takes, in upper case.
const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

/// The names a day-of-week field takes, in upper case.
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// The first fault of `text` (5 or 6 whitespace-separated fields), as the end of
/// a sentence that begins "'TEXT' is not a cron expression": for example `its
/// minute field '61' has 61, outside 0-59`. `None`: nothing this check knows of
/// (the expression may still be one `croner` refuses).
pub fn fault(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let fields = match parts.len() {
        6 => &FIELDS[..],
        5 => &FIELDS[1..],
        _ => return None,
    };
    parts
        .iter()
        .zip(fields)
        .find_map(|(part, &(name, low, high))| {
            part.split(',')
                .find_map(|item| item_fault(item, name, low, high))
                .map(|why| format!("its {name} field '{part}' {why}"))
        })
}

/// What is wrong with one comma-separated item of a field: `A`, `A-B`, `*/S`,
/// `A-B/S` and the like.
fn item_fault(item: &str, name: &str, low: u32, high: u32) -> Option<String> {
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => (range, Some(step)),
        None => (item, None),
    };
    if let Some(step) = step {
        match step.parse::<u32>() {
            Ok(0) => return Some("has a step of 0".to_string()),
            Ok(_) => {}
            Err(_) => return Some(format!("has a step '{step}' that is not a whole number")),
        }
    }
    if item.is_empty() || range.is_empty() {
        return Some("has an empty item".to_string());
    }
    range
        .split('-')
        .find_map(|bound| bound_fault(bound, name, low, high))
}

/// What is wrong with one end of a range.
fn bound_fault(bound: &str, name: &str, low: u32, high: u32) -> Option<String> {
    if bound.is_empty() {
        return Some("has a range with an empty end".to_string());
    }
    if let Ok(number) = bound.parse::<u32>() {
        return (number < low || number > high)
            .then(|| format!("has {number}, outside {low}-{high}"));
    }
    if bound.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("has {bound}, outside {low}-{high}"));
    }
    let upper = bound.to_ascii_uppercase();
    if let ("day-of-week", Some((day, nth))) = (name, bound.split_once('#')) {
        if let Some(why) = bound_fault(day, name, low, high) {
            return Some(why);
        }
        return (!matches!(nth.parse::<u32>(), Ok(1..=5))).then(|| {
            format!("has '{bound}', whose week '{nth}' is not one of a month (DAY#N: N is 1 to 5)")
        });
    }
    match name {
        "month" if bound.chars().all(|c| c.is_ascii_alphabetic()) => (!MONTHS
            .contains(&upper.as_str()))
        .then(|| format!("has '{bound}', which is not a month (JAN to DEC, or 1 to 12)")),
        "day-of-week" if bound.chars().all(|c| c.is_ascii_alphabetic()) && upper != "L" => (!DAYS
            .contains(&upper.as_str()))
        .then(|| format!("has '{bound}', which is not a day of the week (SUN to SAT, or 0 to 7)")),
        // `*`, `?`, and the day forms `L`, `5L`, `15W`, `1#2`: croner reads them.
        _ if bound
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '?' | '#')) =>
        {
            None
        }
        _ => Some(format!("has '{bound}', which cron does not read")),
    }
}

#[cfg(test)]
mod tests {
    use super::fault;

    #[test]
    fn each_fault_names_its_field_and_value() {
        let cases = [
            ("61 * * * *", "its minute field '61' has 61, outside 0-59"),
            ("* * * * 8", "its day-of-week field '8' has 8, outside 0-7"),
            ("*/0 * * * *", "its minute field '*/0' has a step of 0"),
            ("0 0 32 * *", "its day-of-month field '32' has 32, outside 1-31"),
            ("0 0 1 13 *", "its month field '13' has 13, outside 1-12"),
            ("0 24 * * *", "its hour field '24' has 24, outside 0-23"),
            ("60 0 0 * * *", "its second field '60' has 60, outside 0-59"),
            (
                "0 9 * * MON-XYZ",
                "its day-of-week field 'MON-XYZ' has 'XYZ', which is not a day of the week (SUN to SAT, or 0 to 7)",
            ),
            (
                "0 9 * FOO *",
                "its month field 'FOO' has 'FOO', which is not a month (JAN to DEC, or 1 to 12)",
            ),
            ("0 9,,10 * * *", "its hour field '9,,10' has an empty item"),
            ("0 9-/2 * * *", "its hour field '9-/2' has a range with an empty end"),
            ("0 9 * * 1%2", "its day-of-week field '1%2' has '1%2', which cron does not read"),
            (
                "0 9 * * MON#6",
                "its day-of-week field 'MON#6' has 'MON#6', whose week '6' is not one of a month (DAY#N: N is 1 to 5)",
            ),
            ("0 9 * * 9#2", "its day-of-week field '9#2' has 9, outside 0-7"),
        ];
        for (text, why) in cases {
            assert_eq!(fault(text).as_deref(), Some(why), "{text}");
        }
    }

    #[test]
    fn what_cron_reads_passes() {
        for text in [
            "0 9 * * 1-5",
            "*/15 * * * *",
            "0 0 L * *",
            "0 0 15W * *",
            "0 0 * * 5L",
            "0 0 * * 1#2",
            "0 0 * * FRI#5",
            "0 0 ? * MON-FRI",
            "30 2 1,15 jan-jun *",
            "0 0 0 * * 7",
        ] {
            assert_eq!(fault(text), None, "{text}");
        }
    }
}
