//! The real `bootprint` binary: budgets with `--config`, `advise`, `diff`, `export
//! --prometheus`, `report --perfetto`, and `report --html` rendered in headless chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{run, text};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mini() -> PathBuf {
    root().join("tests/fixtures/mini-trace")
}

fn testbed() -> PathBuf {
    root().join("crates/analyze/tests/data/testbed-sysvinit.tgz")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn budgets_from_config() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let conf = d.join("bootprint.toml");
    std::fs::write(
        &conf,
        "[record]\nhz = 50\n[budget]\nkernel_s = 5\ntext_login_s = 3\n",
    )
    .unwrap();
    let o = run(&["report", s(&mini()), "--config", s(&conf)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!(
            "Phases against their budgets ({})",
            conf.display()
        )),
        "{out}"
    );
    // kernel 4.2 s within 5; to text login 6.9 s over 3 by 3.9, udevd heaviest.
    assert!(out.contains("to text login overran by 3.90 s"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("udevd") && l.contains("200")),
        "{out}"
    );
    assert!(!out.contains("kernel overran"), "{out}");
    assert!(out.contains("Boot done = CPU and disk idle"), "{out}");
    let o = run(&["report", s(&mini()), "--config", s(&conf), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["budgets"]["worst"], "text_login");
    assert_eq!(v["budgets"]["phases"][0]["budget_s"], 5.0);
    assert_eq!(v["settle"]["login_s"], 12.0);
    // A bad budget names the file and line.
    std::fs::write(&conf, "[budget]\nkernel_s = soon\n").unwrap();
    let o = run(&["report", s(&mini()), "--config", s(&conf)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("bootprint.toml:2: expected"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        run(&["report", s(&mini()), "--config"]).status.code(),
        Some(2)
    );
}

#[test]
fn advise_text_and_json() {
    let o = run(&["advise", s(&testbed())]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("[settle] `udevadm settle` waited"), "{out}");
    assert!(
        out.contains("evidence: pid 369 udevadm settle 12.56-13.88 s"),
        "{out}"
    );
    let o = run(&["advise", s(&testbed()), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = v["findings"].as_array().unwrap();
    assert!(f
        .iter()
        .all(|x| !x["evidence"].as_array().unwrap().is_empty()));
    assert!(f.iter().any(|x| x["id"] == "late-service"));
    assert_eq!(run(&["advise"]).status.code(), Some(2));
}

#[test]
fn diff_text_json_svg() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let b = root().join("crates/analyze/tests/data/testbed-sysvinit-2.tgz");
    let svg = d.join("d.svg");
    let o = run(&["diff", s(&b), s(&testbed()), "--svg", s(&svg)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("text_login                25.57    25.64    +0.07"),
        "{out}"
    );
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.trim_end().ends_with("</svg>"));
    // Both boots on one axis: each has its own label and its services.
    assert_eq!(svg_text.matches(">udev</text>").count(), 2);
    let o = run(&["diff", s(&b), s(&testbed()), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["services"][0]["name"], "bootlogs");
    assert_eq!(run(&["diff", s(&b)]).status.code(), Some(2));
}

#[test]
fn export_prometheus_and_perfetto() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let o = run(&["export", "--prometheus", s(d), s(&mini())]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let prom = std::fs::read_to_string(d.join("bootprint.prom")).unwrap();
    assert!(
        prom.contains("bootprint_milestone_seconds{milestone=\"text_login\"} 12\n"),
        "{prom}"
    );
    // Written whole through a temporary file: only bootprint.prom is left, and a second
    // export replaces it.
    let o = run(&["export", "--prometheus", s(d), s(&mini())]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("bootprint.prom")]);
    assert_eq!(run(&["export", s(&mini())]).status.code(), Some(2));
    let o = run(&["export", "--prometheus", "/nonexistent", s(&mini())]);
    assert_eq!(o.status.code(), Some(1));
    let pf = d.join("p.json");
    let o = run(&["report", s(&mini()), "--perfetto", s(&pf)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap();
    assert!(v["traceEvents"].as_array().unwrap().len() > 10);
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Renders `html` headless: (console log, screenshot bytes, dumped DOM).
fn render(browser: &str, html: &Path, dir: &Path) -> (String, Vec<u8>, String) {
    render_url(browser, &format!("file://{}", html.display()), dir)
}

fn render_url(browser: &str, url: &str, dir: &Path) -> (String, Vec<u8>, String) {
    let png = dir.join("shot.png");
    let common = [
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,1600",
    ];
    let o = Command::new(browser)
        .args(common)
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .current_dir(dir)
        .output()
        .unwrap();
    let log = text(&o.stderr);
    let shot = std::fs::read(&png).unwrap_or_default();
    let o = Command::new(browser)
        .args(common)
        .arg("--dump-dom")
        .arg(url)
        .current_dir(dir)
        .output()
        .unwrap();
    (format!("{log}{}", text(&o.stderr)), shot, text(&o.stdout))
}

/// The distinct byte values in a PNG's decompressed pixel rows: a blank page has very few.
fn png_variety(png: &[u8]) -> usize {
    use std::io::Read;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let mut idat = Vec::new();
    let mut i = 8;
    while i + 8 <= png.len() {
        let len = u32::from_be_bytes(png[i..i + 4].try_into().unwrap()) as usize;
        if &png[i + 4..i + 8] == b"IDAT" {
            idat.extend_from_slice(&png[i + 8..i + 8 + len]);
        }
        i += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let mut seen = [false; 256];
    raw.iter().for_each(|&b| seen[b as usize] = true);
    seen.iter().filter(|&&x| x).count()
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        testkit::skip("chromium is not installed (scripts/install-deps.sh installs it)");
        return;
    };
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let html = d.join("report.html");
    let o = run(&["report", s(&testbed()), "--html", s(&html)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing to fetch.
    for bad in ["src=\"http", "href=\"http", "<link", "@import", "url(http"] {
        assert!(!page.contains(bad), "the page fetches something: {bad}");
    }
    assert!(page.contains("Phases against their budgets") && page.contains("[settle]"));
    // What the text report has, the page has too (one Report, every format over it).
    for section in ["<p>CPU from ", "<h2>Kernel</h2>", "<h2>Notes</h2>"] {
        assert!(page.contains(section), "no {section} in the page");
    }
    let (log, shot, dom) = render(browser, &html, d);
    assert!(
        !log.contains("Uncaught") && !log.contains("ERROR:CONSOLE"),
        "{log}"
    );
    // The script ran: it writes the shown span, the whole trace to start with.
    assert!(
        dom.contains("<span id=\"span\">0.00 s to 30.80 s</span>"),
        "{}",
        &dom[..dom.len().min(2000)]
    );
    assert!(shot.len() > 10_000, "screenshot of {} bytes", shot.len());
    assert!(png_variety(&shot) > 50, "the screenshot looks blank");

    // Zoomed along time through the URL: the chart shows 12 to 14 s.
    let (log, shot, dom) = render_url(browser, &format!("file://{}#12-14", html.display()), d);
    assert!(!log.contains("Uncaught"), "{log}");
    assert!(
        dom.contains("<span id=\"span\">12.00 s to 14.00 s</span>"),
        "zoomed span missing"
    );
    assert!(png_variety(&shot) > 50);

    // The check catches a broken script: the same page with an error in it.
    let broken = d.join("broken.html");
    std::fs::write(
        &broken,
        page.replace("var LEFT=140", "var LEFT=140;undefinedFn()"),
    )
    .unwrap();
    let (log, _, _) = render(browser, &broken, d);
    assert!(
        log.contains("Uncaught") || log.contains("ERROR:CONSOLE"),
        "{log}"
    );
}

/// `export --prometheus` of a trace in a log directory: its figures against the boots before
/// it there (seq order), as the machine's own baseline; none for a trace alone.
#[test]
fn export_prometheus_with_the_machines_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    // Text logins 12, 12, 11, 13, then 16 and 16: the last two over 1.2 times their median.
    let logins = [12.0, 12.0, 11.0, 13.0, 16.0, 16.0];
    for (i, login) in logins.iter().enumerate() {
        let t = log.join(format!("t{i}"));
        std::fs::create_dir_all(&t).unwrap();
        for e in std::fs::read_dir(mini()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), t.join(e.file_name())).unwrap();
        }
        std::fs::write(t.join("seq"), format!("{}\n", i + 1)).unwrap();
        let events = std::fs::read_to_string(t.join("events.log"))
            .unwrap()
            .replace(
                "12000000000 milestone name=text_login",
                &format!("{} milestone name=text_login", (login * 1e9) as u64),
            );
        std::fs::write(t.join("events.log"), events).unwrap();
    }
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let export = |trace: &Path| {
        let o = run(&["export", "--prometheus", s(&out), s(trace)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        std::fs::read_to_string(out.join("bootprint.prom")).unwrap()
    };
    let prom = export(&log.join("t5"));
    for line in [
        "bootprint_baseline_seconds{milestone=\"text_login\"} 12\n",
        "bootprint_baseline_boots{milestone=\"text_login\"} 5\n",
        "bootprint_over_baseline_boots{milestone=\"text_login\"} 2\n",
        // boot_done is 14 s in every copy: no regression.
        "bootprint_over_baseline_boots{milestone=\"boot_done\"} 0\n",
        // The levers the boot ran with: the fixture's command line has bootprint-boot as init.
        "bootprint_lever_on{lever=\"record\"} 1\n",
        "bootprint_lever_on{lever=\"readahead\"} 0\n",
    ] {
        assert!(prom.contains(line), "{line} in {prom}");
    }
    // The fourth boot: three before it, none over.
    let prom = export(&log.join("t3"));
    assert!(
        prom.contains("bootprint_baseline_boots{milestone=\"text_login\"} 3\n")
            && prom.contains("bootprint_over_baseline_boots{milestone=\"text_login\"} 0\n"),
        "{prom}"
    );
    assert!(
        !prom.contains("lever=\"initramfs\""),
        "no parameter, no series"
    );
    // Too few boots before, and a trace alone: no baseline at all.
    assert!(!export(&log.join("t1")).contains("bootprint_baseline"));
    assert!(!export(&mini()).contains("bootprint_baseline"));
}
