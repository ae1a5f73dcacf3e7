//! Plots drawn from a small run: each SVG parses, holds the expected series, fault shading
//! and legend entries; each PNG decodes and is not blank; `plot DIR` redraws the same SVGs.

use elasticsim::check::InvariantId;
use elasticsim::report::plots::{FAULT_SHADE_SVG, PolicyRow, compare_charts, redraw_run_plots};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Three timed faults (API outage, replica crash, partition) and three leader replicas.
const SCENARIO: &str = r#"
name = "plotted"
seed = 3
duration = "12m"
settle = "15m"

[cluster]
nodes = 2
pods_per_node = 10

[plugin]
policy = "safe"
enable_agent_reuse = true

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "poisson"
from = "0s"
until = "10m"
per_minute = 2.0
profile = "small"
runtime = { min = "20s", max = "2m" }

[[faults]]
at = "2m"
kind = "api_outage"
for = "45s"

[[faults]]
at = "6m"
kind = "partition"
between = ["gocd", "kube-api"]
for = "60s"

[leader]
replicas = 3
variant = "fixed"

[[leader.modules]]
name = "gitops"
runnable_when = "gitops"

[[leader.config]]
at = "0s"
set = { gitops = true }

[[faults]]
at = "4m"
kind = "replica_crash"
replica = "leader"
downtime = "1m"
"#;

const FAULTS: usize = 3;

/// Run the scenario and write its report (with plots) into a fresh folder.
fn report_folder(test_name: &str) -> PathBuf {
    report_folder_of(SCENARIO, test_name)
}

/// Run `scenario` and write its report (with plots) into a fresh folder.
fn report_folder_of(scenario: &str, test_name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "elasticsim-plots-{}-{test_name}",
        std::process::id()
    ));
    // A leftover of an earlier process with the same id may exist; start empty.
    let _ = fs::remove_dir_all(&dir);
    let loaded = elasticsim::scenario::parse(scenario, Path::new("plotted.toml"))
        .expect("the test scenario is valid");
    let settings = elasticsim::world::RunSettings::from_scenario(&loaded.scenario);
    let outcome = elasticsim::run::run_scenario(&loaded.scenario, settings, None, String::new())
        .expect("the test scenario runs");
    elasticsim::report::write_run(&dir, &outcome.info, &outcome.collector)
        .expect("the temp folder is writable");
    dir
}

fn svg(dir: &Path, stem: &str) -> String {
    fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("the SVG was written")
}

/// Elements named `tag` whose attribute `attribute` equals `value`.
fn count(document: &roxmltree::Document, tag: &str, attribute: &str, value: &str) -> usize {
    document
        .descendants()
        .filter(|node| node.has_tag_name(tag) && node.attribute(attribute) == Some(value))
        .count()
}

fn texts(document: &roxmltree::Document) -> Vec<String> {
    document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .map(|node| node.text().unwrap_or_default().trim().to_owned())
        .collect()
}

/// Distinct RGBA pixel values of a PNG, and its size.
fn png_colours(path: &Path) -> (usize, (u32, u32)) {
    let decoder = png::Decoder::new(fs::File::open(path).expect("the PNG was written"));
    let mut reader = decoder.read_info().expect("the PNG header decodes");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader
        .next_frame(&mut buffer)
        .expect("the PNG data decodes");
    let bytes = &buffer[..frame.buffer_size()];
    let channels = frame.color_type.samples();
    let colours: BTreeSet<&[u8]> = bytes.chunks(channels).collect();
    (colours.len(), (frame.width, frame.height))
}

#[test]
fn the_states_plot_stacks_four_areas_and_shades_and_labels_every_fault() {
    let dir = report_folder("states");
    let text = svg(&dir, "states");
    let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
    let layers = ["#2E7D32", "#81C784", "#90A4AE", "#FFCA28"];
    for colour in layers {
        // One stacked area per layer, plus its legend swatch (a rect).
        assert_eq!(
            count(&document, "polygon", "fill", colour),
            1,
            "layer {colour}"
        );
    }
    // One shaded band per fault, plus the legend swatch.
    assert_eq!(
        count(&document, "rect", "fill", FAULT_SHADE_SVG),
        FAULTS + 1
    );
    let labels = texts(&document);
    for legend in [
        "pods pending",
        "agents idle",
        "agents building",
        "jobs waiting",
    ] {
        assert!(
            labels.iter().any(|label| label == legend),
            "{legend} missing: {labels:?}"
        );
    }
    assert!(
        labels.iter().any(|label| label == "fault active (3)"),
        "{labels:?}"
    );
    for kind in ["api_outage", "partition", "replica_crash"] {
        assert!(
            labels.iter().any(|label| label.starts_with(kind)),
            "{kind} unlabelled"
        );
    }
    assert!(
        labels.iter().any(|label| label == "simulated time (min)"),
        "{labels:?}"
    );
}

#[test]
fn the_wait_cdf_draws_the_bound_and_the_reuse_plot_shades_faults() {
    let dir = report_folder("wait");
    let text = svg(&dir, "wait_cdf");
    let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
    // Each line once in the plot and once as its legend swatch.
    assert_eq!(
        count(&document, "polyline", "stroke", "#C62828"),
        2,
        "one bound line"
    );
    assert_eq!(
        count(&document, "polyline", "stroke", "#1565C0"),
        2,
        "one CDF"
    );
    let labels = texts(&document);
    assert!(
        labels
            .iter()
            .any(|label| label.starts_with("max_job_wait = 5m")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|label| label.starts_with("assigned jobs (n = ")),
        "{labels:?}"
    );
    let reuse = svg(&dir, "reuse");
    let document = roxmltree::Document::parse(&reuse).expect("the SVG is XML");
    assert_eq!(
        count(&document, "rect", "fill", FAULT_SHADE_SVG),
        FAULTS + 1
    );
}

#[test]
fn the_leader_plot_has_one_labelled_lane_per_replica_and_its_spans() {
    let dir = report_folder("leader");
    let lanes = fs::read_to_string(dir.join("leader.csv")).expect("leader.csv was written");
    let leading_spans = lanes
        .lines()
        .filter(|line| line.contains(",leading,"))
        .count();
    assert!(
        leading_spans >= 2,
        "a leader crash makes a second term: {lanes}"
    );
    let text = svg(&dir, "leader");
    let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
    let labels = texts(&document);
    for replica in ["replica 0", "replica 1", "replica 2"] {
        assert!(
            labels.iter().any(|label| label == replica),
            "{replica}: {labels:?}"
        );
    }
    // Every leading span is a bar, plus the legend swatch.
    assert_eq!(
        count(&document, "rect", "fill", "#1976D2"),
        leading_spans + 1
    );
    assert_eq!(
        count(&document, "rect", "fill", FAULT_SHADE_SVG),
        FAULTS + 1
    );
}

/// Leader replicas only: a crash of replica 1, a partition of replica 2 from the API and an
/// API outage that hits everyone.
const LANE_FAULTS: &str = r#"
name = "lane-faults"
seed = 1
duration = "4m"
settle = "1m"

[leader]
replicas = 3
variant = "fixed"

[[leader.modules]]
name = "gitops"
runnable_when = "gitops"

[[leader.config]]
at = "0s"
set = { gitops = true }

[[faults]]
at = "1m"
kind = "replica_crash"
replica = 1
downtime = "30s"

[[faults]]
at = "2m"
kind = "partition"
between = ["replica-2", "kube-api"]
for = "20s"

[[faults]]
at = "3m"
kind = "api_outage"
for = "10s"
"#;

/// An SVG attribute as a number.
fn attribute_number(node: &roxmltree::Node, name: &str) -> f64 {
    node.attribute(name)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{name} of {node:?}"))
}

#[test]
fn the_leader_plot_shades_a_replica_fault_in_that_replicas_lane_only() {
    let dir = report_folder_of(LANE_FAULTS, "lane-faults");
    let faults = fs::read_to_string(dir.join("faults.csv")).expect("faults.csv was written");
    let replicas: Vec<&str> = faults
        .lines()
        .skip(1)
        .map(|line| line.rsplit(',').next().unwrap_or_default())
        .collect();
    assert_eq!(replicas, ["1", "2", ""], "{faults}");
    let text = svg(&dir, "leader");
    let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
    // Each replica's label sits at the middle of its lane.
    let label_y = |replica: u32| {
        let wanted = format!("replica {replica}");
        let label = document
            .descendants()
            .find(|node| node.has_tag_name("text") && node.text().map(str::trim) == Some(&wanted))
            .unwrap_or_else(|| panic!("no label {wanted}"));
        attribute_number(&label, "y")
    };
    let lanes: Vec<f64> = (0..3).map(label_y).collect();
    let lane_height = (lanes[0] - lanes[1]).abs();
    // The shading rectangles of the plot (the legend swatch is 24 px wide), in fault order.
    let shades: Vec<(f64, f64)> = document
        .descendants()
        .filter(|node| node.has_tag_name("rect") && node.attribute("fill") == Some(FAULT_SHADE_SVG))
        .filter(|node| attribute_number(node, "width") != 24.0)
        .map(|node| {
            (
                attribute_number(&node, "y"),
                attribute_number(&node, "height"),
            )
        })
        .collect();
    assert_eq!(shades.len(), 3, "{shades:?}");
    let nearest_lane = |(top, height): (f64, f64)| {
        let middle = top + height / 2.0;
        (0..3)
            .min_by(|a, b| {
                let distance = |lane: usize| (lanes[lane] - middle).abs();
                distance(*a).total_cmp(&distance(*b))
            })
            .expect("three lanes")
    };
    for (position, replica) in [(0, 1), (1, 2)] {
        let (_, height) = shades[position];
        assert!(
            height <= lane_height * 1.05,
            "fault {position} is shaded over more than one lane: {shades:?}, lanes {lanes:?}"
        );
        assert_eq!(
            nearest_lane(shades[position]),
            replica,
            "{shades:?} {lanes:?}"
        );
    }
    assert!(
        shades[2].1 >= lane_height * 2.9,
        "the API outage is shaded over every lane: {shades:?}, lanes {lanes:?}"
    );
}

#[test]
fn every_png_decodes_with_many_colours_and_plot_redraws_identical_svgs() {
    let dir = report_folder("png");
    for stem in ["reuse", "states", "wait_cdf", "leader"] {
        let (colours, (width, _)) = png_colours(&dir.join(format!("{stem}.png")));
        assert_eq!(width, 1200);
        // Antialiased text alone brings dozens of grey levels; a blank image has one.
        assert!(colours > 50, "{stem}.png has only {colours} colours");
    }
    let summary = fs::read_to_string(dir.join("summary.md")).expect("summary.md was written");
    assert!(summary.contains("![Leader lanes"), "{summary}");
    assert!(summary.contains("(states.svg)") && summary.contains("(states.png)"));
    let before = svg(&dir, "states");
    let drawn = redraw_run_plots(&dir).expect("the folder's CSVs redraw");
    assert_eq!(drawn.len(), 4);
    assert_eq!(
        svg(&dir, "states"),
        before,
        "redrawing from the CSVs changes nothing"
    );
}

#[test]
fn compare_charts_draw_one_bar_per_policy_in_every_metric_panel() {
    let dir = std::env::temp_dir().join(format!("elasticsim-plots-{}-compare", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let row = |label: &str, reuse_ratio: f64, pass_rate: f64| PolicyRow {
        label: label.to_owned(),
        reuse_ratio,
        wait_s_p95: 40.0,
        pods_created: 12.0,
        pod_seconds: 3000.0,
        pass_rate,
        invariant_pass_rates: if pass_rate < 1.0 {
            vec![(InvariantId::JobWaitBound, pass_rate)]
        } else {
            Vec::new()
        },
        leader: None,
    };
    let rows = [
        row("upstream", 0.0, 1.0),
        row("pr355", 0.6, 0.5),
        row("safe", 0.7, 1.0),
    ];
    let drawn = compare_charts(&dir, &rows).expect("the chart draws");
    assert_eq!(drawn.len(), 1);
    let text = svg(&dir, "compare");
    let document = roxmltree::Document::parse(&text).expect("the SVG is XML");
    // Five metric panels and one invariant panel; every policy has a bar in each.
    for colour in ["#1565C0", "#EF6C00", "#2E7D32"] {
        let bars = count(&document, "rect", "fill", colour);
        // upstream's reuse ratio of 0 is a bar of zero height, which plotters still emits.
        assert_eq!(bars, 6, "policy colour {colour}");
    }
    let labels = texts(&document);
    assert!(
        labels
            .iter()
            .any(|label| label == "seeds keeping job-wait-bound")
    );
    let (colours, _) = png_colours(&dir.join("compare.png"));
    assert!(colours > 50);
}
