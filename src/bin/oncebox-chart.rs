//! `oncebox-chart`: draws the side-by-side throughput figures as an SVG bar chart.
//!
//! ```text
//! oncebox-chart bench/results.json bench/throughput.svg
//! ```
//! The input is what `bench/side_by_side.py` writes: `throughput` maps
//! `"MODE/WORKLOAD/SERVER"` (server `tarantool` or `oncebox`) to an object with
//! `ops_per_sec`; optional `modes` and `workloads` lists give the order. The chart
//! has one panel per wal_mode, each with a pair of bars per workload (Tarantool 2.6
//! beside oncebox) and the oncebox/Tarantool ratio above the pair.

use std::error::Error;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const TARANTOOL: RGBColor = RGBColor(214, 96, 77);
const ONCEBOX: RGBColor = RGBColor(67, 118, 178);

/// Throughput of one workload in one wal_mode: (workload, Tarantool, oncebox).
type Row = (String, Option<f64>, Option<f64>);

/// `(mode, rows)` per wal_mode, in the order the input gives.
fn panels(v: &Value) -> Result<Vec<(String, Vec<Row>)>> {
    let tp = v.get("throughput").and_then(Value::as_object).ok_or("no \"throughput\" object in the input")?;
    let mut keys = Vec::new();
    for k in tp.keys() {
        let mut parts = k.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(m), Some(w), Some(_)) => keys.push((m.to_string(), w.to_string())),
            _ => return Err(format!("throughput key {k:?} is not MODE/WORKLOAD/SERVER").into()),
        }
    }
    let listed = |name: &str, found: Vec<String>| -> Vec<String> {
        match v.get(name).and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(Value::as_str).map(str::to_string).filter(|s| found.contains(s)).collect(),
            None => {
                let mut f = found;
                f.sort();
                f.dedup();
                f
            }
        }
    };
    let modes = listed("modes", keys.iter().map(|k| k.0.clone()).collect());
    let workloads = listed("workloads", keys.iter().map(|k| k.1.clone()).collect());
    let ops = |mode: &str, wl: &str, server: &str| {
        tp.get(&format!("{mode}/{wl}/{server}")).and_then(|r| r.get("ops_per_sec")).and_then(Value::as_f64)
    };
    Ok(modes
        .iter()
        .map(|m| {
            let rows = workloads
                .iter()
                .filter(|w| keys.iter().any(|k| &k.0 == m && &k.1 == *w))
                .map(|w| (w.clone(), ops(m, w, "tarantool"), ops(m, w, "oncebox")))
                .collect();
            (m.clone(), rows)
        })
        .collect())
}

/// A bar from `from` to `to` within segment `i`, `value` high, a few pixels apart from its neighbours.
fn bar(i: usize, left: bool, value: f64, color: RGBColor) -> Rectangle<(SegmentValue<usize>, f64)> {
    let (from, to) = if left {
        (SegmentValue::Exact(i), SegmentValue::CenterOf(i))
    } else {
        (SegmentValue::CenterOf(i), SegmentValue::Exact(i + 1))
    };
    let mut r = Rectangle::new([(from, 0.0), (to, value)], color.filled());
    if left {
        r.set_margin(0, 0, 6, 1);
    } else {
        r.set_margin(0, 0, 1, 6);
    }
    r
}

fn draw(panels: &[(String, Vec<Row>)], out: &str) -> Result<()> {
    let height = 420 * u32::try_from(panels.len().max(1))?;
    let root = SVGBackend::new(out, (1100, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for ((mode, rows), area) in panels.iter().zip(areas.iter()) {
        let top = rows.iter().flat_map(|r| [r.1, r.2]).flatten().fold(0.0_f64, f64::max).max(1.0);
        let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        let mut chart = ChartBuilder::on(area)
            .caption(format!("Throughput, wal_mode = {mode} (ops/s, higher is better)"), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d((0..rows.len().max(2) - 1).into_segmented(), 0.0..top * 1.15)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(rows.len() + 1)
            .y_max_light_lines(1)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_style(("sans-serif", 13))
            .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
            .y_desc("ops/s")
            .draw()?;
        let t: Vec<_> = rows.iter().enumerate().filter_map(|(i, r)| r.1.map(|v| bar(i, true, v, TARANTOOL))).collect();
        chart
            .draw_series(t)?
            .label("Tarantool 2.6")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], TARANTOOL.filled()));
        let o: Vec<_> = rows.iter().enumerate().filter_map(|(i, r)| r.2.map(|v| bar(i, false, v, ONCEBOX))).collect();
        chart
            .draw_series(o)?
            .label("oncebox")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], ONCEBOX.filled()));
        let ratios = rows.iter().enumerate().filter_map(|(i, r)| match (r.1, r.2) {
            (Some(t), Some(o)) if t > 0.0 => Some(Text::new(
                format!("{:.2}x", o / t),
                (SegmentValue::CenterOf(i), t.max(o) + top * 0.02),
                TextStyle::from(("sans-serif", 13)).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )),
            _ => None,
        });
        chart.draw_series(ratios)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        return Err("usage: oncebox-chart RESULTS.json OUT.svg".into());
    };
    let text = std::fs::read_to_string(input).map_err(|e| format!("{input}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{input}: {e}"))?;
    let p = panels(&v)?;
    if p.iter().all(|(_, rows)| rows.is_empty()) {
        return Err(format!("{input}: no throughput figures").into());
    }
    draw(&p, output)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("oncebox-chart: {e}");
        std::process::exit(1);
    }
}
