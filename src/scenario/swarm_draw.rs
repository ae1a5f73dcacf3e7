//! A swarm draw written out: which fault kinds a seed turns on, with what weight, and how the
//! mean interval is scaled. `sim --swarm-draw TEXT` replays a draw the guided hunt made, so a
//! run it found reproduces from scenario, seed and this text. Numbers are kept in hundredths,
//! so the text and the value are the same thing (no float round trip).

use super::fault_type::FaultType;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// A fault kind as a key of a draw's weights, ordered by its name rather than by
/// [`FaultType`]'s own order: a draw's text lists its kinds in key order (`--swarm-draw`
/// reads it back, hunts print it, repros keep it), and they were listed by name when the
/// weights were keyed by the name itself, so this order keeps every written draw the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DrawKind(pub FaultType);

impl Ord for DrawKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.name().cmp(other.0.name())
    }
}

impl PartialOrd for DrawKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One seed's swarm choice. `weights` maps a kind of `[swarm] kinds` to its weight in
/// hundredths (0: off); `interval_pct` scales `mean_interval` (100: as written).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwarmDraw {
    /// Weight in hundredths per fault kind of `[swarm] kinds` (0: off).
    pub(crate) weights: BTreeMap<DrawKind, u32>,
    /// The factor on `mean_interval`, in percent (100: as written).
    pub interval_pct: u32,
}

impl SwarmDraw {
    /// Parse `interval=0.80,pod_delete=2.50,server_crash=0` (any order; kinds not named are
    /// off; `interval` defaults to 1). A key that is neither `interval` nor a fault kind is
    /// refused, naming the valid ones.
    pub(crate) fn parse(text: &str) -> Result<SwarmDraw, String> {
        let mut draw = SwarmDraw {
            weights: BTreeMap::new(),
            interval_pct: 100,
        };
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?}: expected KIND=WEIGHT or interval=FACTOR"))?;
            let hundredths = hundredths(value.trim())
                .ok_or_else(|| format!("{item:?}: expected a number like 1.25 (2 decimals)"))?;
            match key.trim() {
                "interval" if hundredths == 0 => {
                    return Err("interval: expected a factor above 0".to_owned());
                }
                "interval" => draw.interval_pct = hundredths,
                name => {
                    let kind = FaultType::from_name(name).ok_or_else(|| {
                        let names = FaultType::NAMES.join(", ");
                        format!("{name:?}: expected interval or a fault kind ({names})")
                    })?;
                    draw.weights.insert(DrawKind(kind), hundredths);
                }
            }
        }
        Ok(draw)
    }

    /// The kinds switched on, in `order`, with their weights as factors.
    pub(crate) fn enabled(&self, order: &[FaultType]) -> Vec<(FaultType, f64)> {
        order
            .iter()
            .filter_map(|&kind| {
                let weight = *self.weights.get(&DrawKind(kind))?;
                (weight > 0).then(|| (kind, f64::from(weight) / 100.0))
            })
            .collect()
    }
}

impl fmt::Display for SwarmDraw {
    /// The form `parse` reads: `interval=…` first, then kinds by name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interval={}", decimal(self.interval_pct))?;
        for (kind, weight) in &self.weights {
            write!(f, ",{}={}", kind.0.name(), decimal(*weight))?;
        }
        Ok(())
    }
}

fn decimal(hundredths: u32) -> String {
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// `2`, `2.5`, `2.50` → 250; more than two decimals or anything else → None.
fn hundredths(text: &str) -> Option<u32> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || fraction.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let fraction: u32 = format!("{fraction:0<2}").parse().ok()?;
    whole.checked_mul(100)?.checked_add(fraction)
}

#[cfg(test)]
mod tests {
    use super::{DrawKind, SwarmDraw};
    use crate::scenario::{ElasticKind, FaultType};

    #[test]
    fn text_round_trips_exactly() {
        let draw = SwarmDraw::parse("pod_delete=2.5, interval=0.80,server_crash=0").expect("ok");
        assert_eq!(draw.interval_pct, 80);
        let pod_delete = FaultType::Elastic(ElasticKind::PodDelete);
        let server_crash = FaultType::Elastic(ElasticKind::ServerCrash);
        assert_eq!(draw.weights[&DrawKind(pod_delete)], 250);
        assert_eq!(
            draw.to_string(),
            "interval=0.80,pod_delete=2.50,server_crash=0.00"
        );
        assert_eq!(SwarmDraw::parse(&draw.to_string()), Ok(draw.clone()));
        assert_eq!(
            draw.enabled(&[server_crash, pod_delete]),
            vec![(pod_delete, 2.5)]
        );
    }

    #[test]
    fn malformed_items_are_refused() {
        for text in [
            "pod_delete",
            "pod_delete=x",
            "pod_delete=1.234",
            "interval=0",
            "pod_remove=1",
        ] {
            assert!(SwarmDraw::parse(text).is_err(), "{text} was accepted");
        }
    }
}
