//! One lane per leader replica: when it led, when its modules ran, when it was down or
//! paused; a fault that acts on replicas (crash, stop, pause, drift, late callback, a
//! partition of the leader or of replicas) shaded in their lanes only, any other fault (API
//! outage, Lease delete) over every lane.

use super::data::FaultSpan;
use super::kit::{
    FONT, Figure, LIGHT_GRID, LegendEntry, Swatch, TimeUnit, chart_on, draw_legend, drawing,
    fault_legend, shade_faults_in_lanes, with_legend_column,
};
use super::{PlotError, RunData};
use crate::report::LaneState;
use crate::report::format::number_text;
use plotters::coord::Shift;
use plotters::prelude::*;

const LEADING: RGBColor = RGBColor(0x19, 0x76, 0xD2);
const ACTING: RGBColor = RGBColor(0x2E, 0x7D, 0x32);
const DOWN: RGBColor = RGBColor(0x42, 0x42, 0x42);
const PAUSED: RGBColor = RGBColor(0xFF, 0xB3, 0x00);

/// Colour, label and vertical extent within a lane (0 bottom, 1 top) of each state.
fn look(state: LaneState) -> (RGBColor, &'static str, f64, f64) {
    match state {
        LaneState::Leading => (LEADING, "led (runner's view)", 0.12, 0.88),
        LaneState::Acting => (ACTING, "modules running", 0.34, 0.66),
        LaneState::Down => (DOWN, "process down", 0.12, 0.88),
        LaneState::Paused => (PAUSED, "process paused", 0.12, 0.88),
    }
}

pub(super) struct LeaderFigure<'a>(pub &'a RunData);

impl Figure for LeaderFigure<'_> {
    fn title(&self) -> String {
        "Leader lanes: who led, whose modules ran (faults shaded in the lanes they hit)".to_owned()
    }

    fn size_px(&self) -> (u32, u32) {
        let lanes = self.0.replicas.len() as u32;
        (1200, 220 + 70 * lanes.max(2))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let data = self.0;
        let unit = TimeUnit::for_span(data.end_s);
        let lanes = data.replicas.len();
        // Replica i's lane, counted from the top.
        let lane_of = |replica: u32| {
            let position = data.replicas.iter().position(|r| *r == replica);
            (lanes - 1 - position.unwrap_or(0)) as f64
        };
        let fault_lane = |replica: u32| {
            let position = data.replicas.iter().position(|r| *r == replica)?;
            Some((lanes - 1 - position) as f64)
        };
        let (plot, legend) = with_legend_column(root);
        let (what, run) = (self.title(), &data.context.title);
        let mut chart = chart_on(&plot, &what, run, 90, unit.of(data.end_s), lanes as f64)?;
        drawing(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_desc(format!("simulated time ({})", unit.name))
                .axis_desc_style((FONT, 15))
                .light_line_style(LIGHT_GRID)
                .x_label_formatter(&|value| number_text(*value))
                .y_label_formatter(&|value| number_text(*value))
                .draw(),
        )?;
        // States that cover the whole lane first, so the narrower "modules running" bar
        // stays visible on top of "led".
        let mut spans: Vec<_> = data.lanes.iter().collect();
        spans.sort_by_key(|span| span.state == LaneState::Acting);
        let bars = spans.into_iter().map(|span| {
            let (color, _, bottom, top) = look(span.state);
            let lane = lane_of(span.replica);
            let until_s = span.until_s.unwrap_or(data.end_s);
            Rectangle::new(
                [
                    (unit.of(span.from_s), lane + bottom),
                    (unit.of(until_s), lane + top),
                ],
                color.mix(0.9).filled(),
            )
        });
        drawing(chart.draw_series(bars))?;
        shade_faults_in_lanes(
            &mut chart,
            &data.faults,
            data.end_s,
            unit,
            Some(&fault_lane),
        )?;
        let label_style = (FONT, 15).into_font().color(&BLACK);
        let (base_x, base_y) = plot.get_base_pixel();
        for replica in &data.replicas {
            let (x, y) = chart.backend_coord(&(0.0, lane_of(*replica) + 0.5));
            let position = (x - base_x - 84, y - base_y - 8);
            let text = Text::new(format!("replica {replica}"), position, label_style.clone());
            drawing(plot.draw(&text))?;
        }
        draw_legend(&legend, &legend_entries(&data.faults))
    }
}

/// The legend: one swatch per lane state, then the faults the run had.
fn legend_entries(faults: &[FaultSpan]) -> Vec<LegendEntry> {
    let mut entries: Vec<LegendEntry> = [
        LaneState::Leading,
        LaneState::Acting,
        LaneState::Down,
        LaneState::Paused,
    ]
    .into_iter()
    .map(|state| {
        let (color, label, _, _) = look(state);
        LegendEntry::new(label, Swatch::Area(color.mix(0.9)))
    })
    .collect();
    entries.extend(fault_legend(faults));
    entries
}
