// SPDX-License-Identifier: GPL-2.0-only
//! How `scx_linger top` draws one frame: a header on the node and the
//! scheduler, CPU use per class now and over the last minutes, guest
//! harvest, the jobs, the gangs with their slot timeline, recent events,
//! and the keys. Sections shrink with the terminal; below a minimum size
//! it says how much room it needs instead.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;

use super::app::App;
use crate::labels::class::Class;
use crate::observe::schema::{fmt_delay_us as delay, RotationView, Snapshot};

const MIN_W: u16 = 60;
const MIN_H: u16 = 16;

fn class_color(i: usize) -> Color {
    [Color::Green, Color::Blue, Color::Magenta, Color::Cyan]
        .get(i)
        .copied()
        .unwrap_or(Color::White)
}

fn clock(ms: u64) -> String {
    let s = ms / 1000 % 86400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < MIN_W || area.height < MIN_H {
        let msg = format!(
            "terminal too small: {}x{} (scx_linger top needs {MIN_W}x{MIN_H}); q quits",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return;
    }
    let Some(s) = &app.snap else {
        draw_no_agent(f, app, area);
        return;
    };
    let gang_rows = if s.gangs.is_empty() {
        0
    } else {
        s.gangs.len() as u16 + s.rotations.len() as u16 + 3
    };
    let [header, classes, jobs, gangs, events, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(Class::ALL.len() as u16 + 4),
        Constraint::Min(4),
        Constraint::Length(gang_rows.min(10)),
        Constraint::Length(6),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(f, s, header);
    draw_classes(f, s, classes);
    draw_jobs(f, app, jobs);
    if gang_rows > 0 {
        draw_gangs(f, s, gangs);
    }
    draw_events(f, s, events);
    let filter = app.filter.map_or("all", |i| Class::ALL[i].name());
    let keys_line = format!(
        " q quit   s sort: {}   c class: {}   ↑↓ PgUp PgDn scroll",
        app.sort.name(),
        filter
    );
    f.render_widget(
        Paragraph::new(keys_line).style(Style::new().add_modifier(Modifier::REVERSED)),
        keys,
    );
}

fn draw_no_agent(f: &mut Frame, app: &App, area: Rect) {
    let n = &app.local;
    let running = if n.state == "enabled" {
        format!("the kernel runs sched_ext scheduler {:?}", n.scheduler)
    } else {
        "the kernel runs its default scheduler (sched_ext state: ".to_string()
            + if n.state.is_empty() {
                "absent"
            } else {
                &n.state
            }
            + ")"
    };
    let text = vec![
        Line::from(Span::styled(
            "scx_linger top",
            Style::new().add_modifier(Modifier::BOLD),
        )),
        Line::from(""),
        Line::from(app.error.clone().unwrap_or_default()),
        Line::from(running),
        Line::from(""),
        Line::from("Trying again every second; q quits."),
    ];
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
}

fn draw_header(f: &mut Frame, s: &Snapshot, area: Rect) {
    let n = &s.node;
    let title = Line::from(vec![
        Span::styled("scx_linger top ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(n.summary()),
    ]);
    let clock = n
        .clock
        .map_or("clock: unreadable (adjtimex refused)".into(), |c| {
            format!("clock: {}", c.describe())
        });
    let sched = Line::from(format!(
        "sched_ext: {} ({})   {clock}",
        n.scheduler, n.state
    ));
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0));
    let accounting = if n.accounting {
        String::new()
    } else {
        "   (accounting off: --no-accounting)".into()
    };
    let harvest = Line::from(format!(
        "guest harvest (guest CPU / CPU primaries left idle): {} now, {} since start   idle {:.2} CPUs{accounting}",
        pct(s.machine.guest_harvest_now),
        pct(s.machine.guest_harvest),
        s.machine.idle_cpus_now
    ));
    f.render_widget(Paragraph::new(vec![title, sched, harvest]), area);
}

/// Per class: CPUs now, run delay, and a sparkline of the last minutes.
fn draw_classes(f: &mut Frame, s: &Snapshot, area: Rect) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(" CPU by class (CPUs busy; history, one column a second) ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let rows = Layout::vertical(vec![Constraint::Length(1); Class::ALL.len() + 1]).split(inner);
    let cpus = u64::from(s.node.cpus.max(1)) * 100;
    let width = inner.width.saturating_sub(46) as usize;
    for (i, row) in rows.iter().enumerate() {
        let [label, spark] =
            Layout::horizontal([Constraint::Length(46), Constraint::Min(1)]).areas(*row);
        let (name, now, delay, series): (&str, f64, String, Vec<u64>) = if i < Class::ALL.len() {
            let c = s.class(Class::ALL[i].name());
            (
                Class::ALL[i].name(),
                c.map_or(0.0, |c| c.cpus_now),
                c.map_or("-".into(), |c| {
                    format!(
                        "delay p50 {} p99 {}",
                        delay(c.run_delay_p50_us_now),
                        delay(c.run_delay_p99_us_now)
                    )
                }),
                s.history
                    .iter()
                    .map(|h| (h.cpus[i] * 100.0) as u64)
                    .collect(),
            )
        } else {
            let idle = s.history.iter().map(|h| (h.idle * 100.0) as u64).collect();
            ("idle", s.machine.idle_cpus_now, String::new(), idle)
        };
        let color = class_color(i);
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!("{name:<10}"), Style::new().fg(color)),
                Span::raw(format!("{now:>5.2}  {delay}")),
            ])),
            label,
        );
        let tail = &series[series.len().saturating_sub(width)..];
        f.render_widget(
            Sparkline::default()
                .data(tail)
                .max(cpus)
                .style(Style::new().fg(color)),
            spark,
        );
    }
}

fn draw_jobs(f: &mut Frame, app: &App, area: Rect) {
    let jobs = app.jobs();
    let header = Row::new([
        "job",
        "class",
        "CPUs now",
        "CPU s",
        "runnable",
        "CPUs max",
        "p99 delay",
        "class from",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = jobs.iter().skip(app.scroll).map(|j| {
        let i = Class::ALL
            .iter()
            .position(|c| c.name() == j.class)
            .unwrap_or(9);
        Row::new([
            j.path.clone(),
            j.class.clone(),
            format!("{:.2}", j.cpus_now),
            format!("{:.1}", j.cpu_seconds),
            j.threads_runnable.to_string(),
            j.cpus_max.to_string(),
            delay(j.run_delay_p99_us),
            j.source.clone(),
        ])
        .style(Style::new().fg(class_color(i)))
    });
    let widths = [
        Constraint::Min(16),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(22),
    ];
    let title = format!(" jobs ({}; sorted by {}) ", jobs.len(), app.sort.name());
    f.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::default().borders(Borders::TOP).title(title)),
        area,
    );
}

/// A rotation as one line: each slot's share of the cycle, the open
/// phase as dots, and a marker where the cycle stands now.
fn timeline(r: &RotationView, width: usize) -> String {
    if r.cycle_ms <= 0.0 || width == 0 {
        return String::new();
    }
    let col = |ms: f64| ((ms / r.cycle_ms) * width as f64) as usize;
    let mut cells = vec!['.'; width];
    for (i, s) in r.slots.iter().enumerate() {
        let mark = char::from_digit((i % 36) as u32, 36).unwrap_or('#');
        for c in cells
            .iter_mut()
            .take(col(s.start_ms + s.len_ms).min(width))
            .skip(col(s.start_ms))
        {
            *c = mark;
        }
    }
    let at = col(r.position_ms).min(width - 1);
    cells[at] = '|';
    cells.into_iter().collect()
}

fn draw_gangs(f: &mut Frame, s: &Snapshot, area: Rect) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(" gangs (slot timeline: slot number per column, . open phase, | now) ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = Vec::new();
    for r in &s.rotations {
        let names: Vec<String> = r
            .slots
            .iter()
            .enumerate()
            .map(|(i, sl)| {
                let row = sl.row.map(|r| format!("row {r}:")).unwrap_or_default();
                format!("{i}={row}{} {:.0}ms", sl.gangs.join("+"), sl.len_ms)
            })
            .collect();
        let width = (inner.width as usize).saturating_sub(24).min(60);
        lines.push(Line::from(format!(
            "{:<10} {:>6.0}ms [{}] {}",
            r.tier,
            r.cycle_ms,
            timeline(r, width),
            names.join(" ")
        )));
    }
    for g in &s.gangs {
        let partial = if g.slots > 0 {
            g.partial_starts as f64 * 100.0 / g.slots as f64
        } else {
            0.0
        };
        let row = g.row.map_or("this node".into(), |r| format!("row {r}"));
        lines.push(Line::from(format!(
            "{:<24} {:<10} {:<9} {} threads  {} slots  {:.1}% partial  skew p50 {} p99 {}  backfill {:.1} s",
            g.path,
            g.class,
            row,
            g.size,
            g.slots,
            partial,
            delay(g.skew_p50_us),
            delay(g.skew_p99_us),
            g.backfill_seconds
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn draw_events(f: &mut Frame, s: &Snapshot, area: Rect) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(" recent events ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let guard = s.events.get("guard_grant").copied().unwrap_or(0);
    let mut lines = vec![Line::from(format!(
        "starvation guard grants since load: {guard}   guests preempted for primaries: {}",
        s.events.get("preempt_guest").copied().unwrap_or(0)
    ))];
    let room = (inner.height as usize).saturating_sub(1);
    for l in s.log.iter().rev().take(room).rev() {
        lines.push(Line::from(format!(
            "{} {:<5} {}",
            clock(l.time_ms),
            l.level,
            l.message
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::schema::SlotView;

    #[test]
    fn timeline_marks_slots_open_phase_and_now() {
        let r = RotationView {
            tier: "gang".into(),
            cycle_ms: 200.0,
            open_ms: 20.0,
            position_ms: 150.0,
            slots: vec![
                SlotView {
                    start_ms: 0.0,
                    len_ms: 90.0,
                    gangs: vec!["/a".into()],
                    row: None,
                },
                SlotView {
                    start_ms: 90.0,
                    len_ms: 90.0,
                    gangs: vec!["/b".into()],
                    row: None,
                },
            ],
        };
        assert_eq!(timeline(&r, 20), "000000000111111|11..");
        assert_eq!(clock(3_723_000), "01:02:03");
    }
}
