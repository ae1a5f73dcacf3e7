//! The time plots and the wait distribution of one run.

use super::kit::{
    Figure, LegendEntry, Swatch, TimeUnit, chart_on, draw_legend, draw_mesh, drawing, fault_legend,
    shade_faults, with_legend_column,
};
use super::{PlotError, RunData};
use crate::report::format::duration_text;
use plotters::coord::Shift;
use plotters::prelude::*;

pub(super) const BUILDING: RGBColor = RGBColor(0x2E, 0x7D, 0x32);
pub(super) const IDLE: RGBColor = RGBColor(0x81, 0xC7, 0x84);
pub(super) const RUNNING_NO_AGENT: RGBColor = RGBColor(0x90, 0xA4, 0xAE);
pub(super) const PENDING: RGBColor = RGBColor(0xFF, 0xCA, 0x28);
pub(super) const WAITING: RGBColor = RGBColor(0x15, 0x65, 0xC0);
pub(super) const REUSE: RGBColor = RGBColor(0x15, 0x65, 0xC0);
pub(super) const BOUND: RGBColor = RGBColor(0xC6, 0x28, 0x28);

/// Reuse ratio over simulated time.
pub(super) struct ReuseFigure<'a>(pub &'a RunData);

impl Figure for ReuseFigure<'_> {
    fn title(&self) -> String {
        "Reuse ratio over time (faults shaded)".to_owned()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let data = self.0;
        let unit = TimeUnit::for_span(data.end_s);
        let (plot, legend) = with_legend_column(root);
        let mut chart = chart_on(
            &plot,
            &self.title(),
            &data.context.title,
            64,
            unit.of(data.end_s),
            1.05,
        )?;
        draw_mesh(
            &mut chart,
            &format!("simulated time ({})", unit.name),
            "reused assignments ÷ assignments",
        )?;
        shade_faults(&mut chart, &data.faults, data.end_s, unit)?;
        let points = data
            .timeline
            .iter()
            .map(|point| (unit.of(point.t_s), point.reuse_ratio));
        drawing(chart.draw_series(LineSeries::new(points, REUSE.stroke_width(2))))?;
        let mut entries = vec![LegendEntry::new("reuse ratio so far", Swatch::Line(REUSE))];
        entries.extend(fault_legend(&data.faults));
        draw_legend(&legend, &entries)
    }
}

/// Pods and agents by state (stacked areas) and jobs waiting, faults shaded.
pub(super) struct StatesFigure<'a>(pub &'a RunData);

/// The stacked layers, bottom first: (label, colour, top of the layer at a sample).
type Layer = (&'static str, RGBColor, fn(&super::TimelinePoint) -> f64);

fn layers() -> [Layer; 4] {
    [
        ("agents building", BUILDING, |p| p.agents_building),
        ("agents idle", IDLE, |p| p.agents_building + p.agents_idle),
        ("pods running, no agent", RUNNING_NO_AGENT, |p| {
            p.pods_running.max(p.agents_building + p.agents_idle)
        }),
        ("pods pending", PENDING, |p| {
            p.pods_running.max(p.agents_building + p.agents_idle) + p.pods_pending
        }),
    ]
}

impl Figure for StatesFigure<'_> {
    fn title(&self) -> String {
        "Pods and agents by state over time (faults shaded)".to_owned()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let data = self.0;
        let unit = TimeUnit::for_span(data.end_s);
        let layers = layers();
        let top = data
            .timeline
            .iter()
            .map(|point| (layers[3].2)(point).max(point.jobs_waiting))
            .fold(1.0, f64::max);
        let (plot, legend) = with_legend_column(root);
        let mut chart = chart_on(
            &plot,
            &self.title(),
            &data.context.title,
            64,
            unit.of(data.end_s),
            top * 1.22,
        )?;
        draw_mesh(
            &mut chart,
            &format!("simulated time ({})", unit.name),
            "count (pods, agents, jobs)",
        )?;
        // Stacked areas: each layer's top is drawn from the ground, tallest first, so every
        // lower layer covers the part of the taller ones that is not its own.
        for (_, color, layer_top) in layers.iter().rev() {
            let points: Vec<(f64, f64)> = data
                .timeline
                .iter()
                .map(|point| (unit.of(point.t_s), layer_top(point)))
                .collect();
            drawing(chart.draw_series(AreaSeries::new(points, 0.0, color.filled())))?;
        }
        shade_faults(&mut chart, &data.faults, data.end_s, unit)?;
        let waiting = data
            .timeline
            .iter()
            .map(|point| (unit.of(point.t_s), point.jobs_waiting));
        drawing(chart.draw_series(LineSeries::new(waiting, WAITING.stroke_width(2))))?;
        let mut entries: Vec<LegendEntry> = layers
            .iter()
            .rev()
            .map(|(label, color, _)| LegendEntry::new(*label, Swatch::Area(color.to_rgba())))
            .collect();
        entries.push(LegendEntry::new("jobs waiting", Swatch::Line(WAITING)));
        entries.extend(fault_legend(&data.faults));
        draw_legend(&legend, &entries)
    }
}

/// The job-wait CDF with the `max_job_wait` bound.
pub(super) struct WaitFigure<'a>(pub &'a RunData);

/// Step points of the empirical CDF of ascending `values`, scaled by `divisor`.
pub(super) fn cdf_steps(values: &[f64], divisor: f64) -> Vec<(f64, f64)> {
    let count = values.len() as f64;
    let mut points = Vec::with_capacity(2 * values.len() + 1);
    points.push((0.0, 0.0));
    for (rank, value) in values.iter().enumerate() {
        let x = value / divisor;
        points.push((x, rank as f64 / count));
        points.push((x, (rank + 1) as f64 / count));
    }
    points
}

impl Figure for WaitFigure<'_> {
    fn title(&self) -> String {
        "Job wait distribution (CDF) with the max_job_wait bound".to_owned()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let data = self.0;
        let bound_s = data.context.max_job_wait_s;
        let longest_s = data.waits_s.last().copied().unwrap_or(0.0);
        let span_s = longest_s.max(bound_s.unwrap_or(0.0)).max(1.0) * 1.08;
        let unit = TimeUnit::for_span(span_s);
        let (plot, legend) = with_legend_column(root);
        let mut chart = chart_on(
            &plot,
            &self.title(),
            &data.context.title,
            64,
            unit.of(span_s),
            1.05,
        )?;
        draw_mesh(
            &mut chart,
            &format!("wait from scheduled to assigned ({})", unit.name),
            "fraction of assigned jobs waiting ≤ x",
        )?;
        let steps = cdf_steps(&data.waits_s, unit.seconds_per_unit);
        drawing(chart.draw_series(LineSeries::new(steps, REUSE.stroke_width(2))))?;
        let mut entries = vec![LegendEntry::new(
            format!("assigned jobs (n = {})", data.waits_s.len()),
            Swatch::Line(REUSE),
        )];
        if let Some(bound_s) = bound_s {
            let x = unit.of(bound_s);
            let line = LineSeries::new([(x, 0.0), (x, 1.05)], BOUND.stroke_width(2));
            drawing(chart.draw_series(line))?;
            entries.push(LegendEntry::new(
                format!("max_job_wait = {}", duration_text(bound_s)),
                Swatch::Line(BOUND),
            ));
        }
        if data.jobs_unassigned > 0 {
            entries.push(LegendEntry::new(
                format!("{} job(s) never assigned", data.jobs_unassigned),
                Swatch::Note,
            ));
        }
        draw_legend(&legend, &entries)
    }
}
