//! Number and time formatting shared by the CSV tables, Markdown and terminal summaries.
//! Every function is exact and platform-independent, so reports are byte-for-byte
//! reproducible.

use crate::trace::Actor;

/// Milliseconds as exact decimal seconds without trailing zeros: `301500` → `301.5`,
/// `2000` → `2`, `7` → `0.007`.
pub(crate) fn seconds_text(ms: u64) -> String {
    let (whole, fraction) = (ms / 1000, ms % 1000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:03}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Optional milliseconds as seconds, empty when unknown (an empty CSV cell).
pub(crate) fn optional_seconds_text(ms: Option<u64>) -> String {
    ms.map(seconds_text).unwrap_or_default()
}

/// A number for people: integers without a fraction, others with up to three decimals.
pub(crate) fn number_text(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0');
    text.trim_end_matches('.').to_owned()
}

/// A ratio in a CSV cell: four decimals.
pub(crate) fn ratio_text(value: f64) -> String {
    format!("{value:.4}")
}

/// A duration for people: `14.2s` under a minute, else `5m01s` or `1h02m03s` (whole seconds).
pub(crate) fn duration_text(seconds: f64) -> String {
    if seconds < 59.95 {
        return format!("{seconds:.1}s");
    }
    let whole = seconds.round() as u64;
    let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60);
    if hours > 0 {
        format!("{hours}h{minutes:02}m{rest:02}s")
    } else {
        format!("{minutes}m{rest:02}s")
    }
}

/// Who deleted a pod, as written in `pods.csv`.
pub(crate) fn actor_text(actor: Actor) -> String {
    match actor {
        Actor::Allocator => "allocator".to_owned(),
        Actor::External => "external".to_owned(),
        Actor::NodeLoss => "node_loss".to_owned(),
        Actor::Replica(index) => format!("replica:{index}"),
    }
}
