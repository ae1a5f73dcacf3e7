//! Comparison charts: one panel per metric, one bar per policy (same colour per policy in
//! every panel), for `compare` and `nightly`.

use super::kit::{FONT, Figure, LIGHT_GRID, drawing, render};
use super::{PlotError, PlotFile};
use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::report::format::number_text;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One policy's numbers over the seeds of a comparison (means over seeds unless said).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyRow {
    /// The bar's label: a policy name, or `policy/variant`.
    pub label: String,
    /// The policy's reuse ratio over its seeds.
    pub reuse_ratio: f64,
    /// The policy's 95th-percentile job wait over its seeds, in seconds.
    pub wait_s_p95: f64,
    /// Pods created per seed, on average.
    pub pods_created: f64,
    /// Busy + idle + pending pod-seconds.
    pub pod_seconds: f64,
    /// Fraction of seeds where every invariant held.
    pub pass_rate: f64,
    /// Per invariant id, the fraction of seeds where it held. Ids missing from one row but
    /// present in another count as held in every seed of that row.
    pub invariant_pass_rates: Vec<(InvariantId, f64)>,
    /// A leader comparison's figures (then the elastic-agent panels are left out).
    pub leader: Option<LeaderBars>,
}

/// One variant's leader figures over the seeds of a comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LeaderBars {
    /// Pooled over every failover of every seed.
    pub failover_s_p95: f64,
    /// The longest failover, in seconds.
    pub failover_s_max: f64,
    /// Means per seed.
    pub no_leader_s: f64,
    /// Seconds per seed with two or more replicas acting.
    pub two_acting_s: f64,
}

const POLICY_COLOURS: [RGBColor; 6] = [
    RGBColor(0x15, 0x65, 0xC0),
    RGBColor(0xEF, 0x6C, 0x00),
    RGBColor(0x2E, 0x7D, 0x32),
    RGBColor(0x6A, 0x1B, 0x9A),
    RGBColor(0xC6, 0x28, 0x28),
    RGBColor(0x00, 0x83, 0x8F),
];

/// A policy's own colour, the first ones of `POLICY_COLOURS`: a policy keeps its colour in
/// every chart, whatever else is compared with it.
fn own_colour(policy: Policy) -> RGBColor {
    match policy {
        Policy::Upstream => POLICY_COLOURS[0],
        Policy::Pr355 => POLICY_COLOURS[1],
        Policy::Safe => POLICY_COLOURS[2],
    }
}

/// The colour of a bar labelled `label` (a policy name, `policy/variant` or `policy (…)`),
/// at `index` among the bars: a known policy's own colour, else one of the others by index.
pub(crate) fn policy_colour(label: &str, index: usize) -> RGBColor {
    let name = label.split(['/', ' ']).next().unwrap_or(label);
    match Policy::from_name(name) {
        Some(policy) => own_colour(policy),
        None => {
            let others = POLICY_COLOURS.len() - Policy::ALL.len();
            POLICY_COLOURS[Policy::ALL.len() + index % others]
        }
    }
}

/// One panel: its title and each policy's value.
struct Panel {
    title: String,
    values: Vec<f64>,
}

struct CompareFigure {
    /// The bars' labels, in order.
    labels: Vec<String>,
    /// Leader variants rather than policies.
    leader: bool,
    panels: Vec<Panel>,
}

const COLUMNS: usize = 3;

fn panels(rows: &[PolicyRow]) -> Vec<Panel> {
    let metric = |title: &str, value: fn(&PolicyRow) -> f64| Panel {
        title: title.to_owned(),
        values: rows.iter().map(value).collect(),
    };
    fn leader(row: &PolicyRow) -> LeaderBars {
        row.leader.unwrap_or_default()
    }
    let mut panels = if rows.iter().any(|row| row.leader.is_some()) {
        vec![
            metric("failover p95, s (lower is better)", |row| {
                leader(row).failover_s_p95
            }),
            metric("failover max, s (lower is better)", |row| {
                leader(row).failover_s_max
            }),
            metric("no leader, s per seed (lower is better)", |row| {
                leader(row).no_leader_s
            }),
            metric("two acting, s per seed (lower is safer)", |row| {
                leader(row).two_acting_s
            }),
        ]
    } else {
        vec![
            metric("reuse ratio (higher is better)", |row| row.reuse_ratio),
            metric("p95 job wait, s (lower is better)", |row| row.wait_s_p95),
            metric("pods created (lower is cheaper)", |row| row.pods_created),
            metric("pod-seconds (lower is cheaper)", |row| row.pod_seconds),
        ]
    };
    panels.push(metric("seeds passing every invariant", |row| row.pass_rate));
    let mut invariants: Vec<InvariantId> = rows
        .iter()
        .flat_map(|row| row.invariant_pass_rates.iter().map(|&(id, _)| id))
        .collect();
    invariants.sort_unstable();
    invariants.dedup();
    for id in invariants {
        panels.push(Panel {
            title: format!("seeds keeping {id}"),
            values: rows
                .iter()
                .map(|row| {
                    let rate = row
                        .invariant_pass_rates
                        .iter()
                        .find(|&&(other, _)| other == id);
                    rate.map_or(1.0, |(_, rate)| *rate)
                })
                .collect(),
        });
    }
    panels
}

impl Figure for CompareFigure {
    fn title(&self) -> String {
        if self.leader {
            "Variants compared: one bar per variant, one panel per metric".to_owned()
        } else {
            "Policies compared: one bar per policy, one panel per metric".to_owned()
        }
    }

    fn size_px(&self) -> (u32, u32) {
        let rows = self.panels.len().div_ceil(COLUMNS) as u32;
        (1200, 70 + 300 * rows)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let body = drawing(root.titled(&self.title(), (FONT, 22)))?;
        let rows = self.panels.len().div_ceil(COLUMNS);
        let cells = body.split_evenly((rows, COLUMNS));
        for (panel, cell) in self.panels.iter().zip(cells.iter()) {
            self.draw_panel(panel, cell)?;
        }
        Ok(())
    }
}

impl CompareFigure {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        panel: &Panel,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), PlotError> {
        let count = self.labels.len() as f64;
        let highest = panel.values.iter().copied().fold(0.0, f64::max);
        let top = if highest > 0.0 { highest * 1.25 } else { 1.0 };
        let mut chart = drawing(
            ChartBuilder::on(area)
                .caption(&panel.title, (FONT, 16))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(56)
                .build_cartesian_2d(-0.5..count - 0.5, 0.0..top),
        )?;
        drawing(
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .light_line_style(LIGHT_GRID)
                .y_label_formatter(&|value| number_text(*value))
                .label_style((FONT, 13))
                .draw(),
        )?;
        let bars = panel.values.iter().enumerate().map(|(index, value)| {
            let x = index as f64;
            Rectangle::new(
                [(x - 0.32, 0.0), (x + 0.32, *value)],
                policy_colour(&self.labels[index], index).filled(),
            )
        });
        drawing(chart.draw_series(bars))?;
        let centred = |size| {
            (FONT, size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom))
        };
        let labels = panel.values.iter().enumerate().map(|(index, value)| {
            Text::new(
                number_text(*value),
                (index as f64, *value + top * 0.01),
                centred(13),
            )
        });
        drawing(chart.draw_series(labels))?;
        // Policy names under the bars, in pixels below the x axis (relative to the panel).
        let (base_x, base_y) = area.get_base_pixel();
        for (index, policy) in self.labels.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(index as f64, 0.0));
            let name = Text::new(policy.clone(), (x - base_x, y - base_y + 22), centred(14));
            drawing(area.draw(&name))?;
        }
        Ok(())
    }
}

/// Draw `compare.svg` and `compare.png` into `dir` (created if needed): one panel per metric
/// (reuse ratio, p95 wait, pods created, pod-seconds — or, for leader rows, failover p95 and
/// max, time with no leader and with two acting — then the pass rate and each invariant's
/// pass rate), one bar per row. Draws nothing for no rows.
pub fn compare_charts(dir: &Path, rows: &[PolicyRow]) -> Result<Vec<PlotFile>, PlotError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Write {
        path: dir.display().to_string(),
        source,
    })?;
    let figure = CompareFigure {
        labels: rows.iter().map(|row| row.label.clone()).collect(),
        leader: rows.iter().any(|row| row.leader.is_some()),
        panels: panels(rows),
    };
    render(dir, "compare", &figure)?;
    Ok(vec![PlotFile {
        stem: "compare".to_owned(),
        title: figure.title(),
    }])
}
