//! A swarm draw written out: which fault kinds a seed turns on, with what weight, and how the
//! mean interval is scaled. `sim --swarm-draw TEXT` replays a draw the guided hunt made, so a
//! run it found reproduces from scenario, seed and this text. Numbers are kept in hundredths,
//! so the text and the value are the same thing (no float round trip).

use std::collections::BTreeMap;
use std::fmt;

/// One seed's swarm choice. `weights` maps a kind of `[swarm] kinds` to its weight in
/// hundredths (0: off); `interval_pct` scales `mean_interval` (100: as written).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwarmDraw {
    /// Weight in hundredths per fault kind of `[swarm] kinds` (0: off).
    pub weights: BTreeMap<String, u32>,
    /// The factor on `mean_interval`, in percent (100: as written).
    pub interval_pct: u32,
}

impl SwarmDraw {
    /// Parse `interval=0.80,pod_delete=2.50,server_crash=0` (any order; kinds not named are
    /// off; `interval` defaults to 1).
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
                kind => {
                    draw.weights.insert(kind.to_owned(), hundredths);
                }
            }
        }
        Ok(draw)
    }

    /// The kinds switched on, in `order`, with their weights as factors.
    pub(crate) fn enabled(&self, order: &[String]) -> Vec<(String, f64)> {
        order
            .iter()
            .filter_map(|kind| {
                let weight = *self.weights.get(kind)?;
                (weight > 0).then(|| (kind.clone(), f64::from(weight) / 100.0))
            })
            .collect()
    }
}

impl fmt::Display for SwarmDraw {
    /// The form `parse` reads: `interval=…` first, then kinds by name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interval={}", decimal(self.interval_pct))?;
        for (kind, weight) in &self.weights {
            write!(f, ",{kind}={}", decimal(*weight))?;
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
    use super::SwarmDraw;

    #[test]
    fn text_round_trips_exactly() {
        let draw = SwarmDraw::parse("pod_delete=2.5, interval=0.80,server_crash=0").expect("ok");
        assert_eq!(draw.interval_pct, 80);
        assert_eq!(draw.weights["pod_delete"], 250);
        assert_eq!(
            draw.to_string(),
            "interval=0.80,pod_delete=2.50,server_crash=0.00"
        );
        assert_eq!(SwarmDraw::parse(&draw.to_string()), Ok(draw.clone()));
        let order = ["server_crash".to_owned(), "pod_delete".to_owned()];
        assert_eq!(draw.enabled(&order), vec![("pod_delete".to_owned(), 2.5)]);
    }

    #[test]
    fn malformed_items_are_refused() {
        for text in [
            "pod_delete",
            "pod_delete=x",
            "pod_delete=1.234",
            "interval=0",
        ] {
            assert!(SwarmDraw::parse(text).is_err(), "{text} was accepted");
        }
    }
}
