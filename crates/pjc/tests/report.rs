//! The HTML report (`pjc explain --html`, `pjc compile --report`) in a real
//! headless browser: Chromium loads each page, its script must finish
//! without an error (the page marks its body `data-rendered="ok"`, and
//! `data-errors` plus the `#errors` block on any script error; Chromium's
//! console log must have no uncaught exception), and the numbers the browser
//! shows must be `pjc explain`'s text: every value's shardings, every
//! collective's bytes and reason, the kernel counts, the peak memory, the
//! device grid of `--value`, and a real run's measured split per rank.
//!
//! Without Chromium (`chromium`, or the browser `PJC_CHROMIUM` names) the
//! browser tests skip with a message, unless `PJC_REQUIRE_BROWSER=1` (set by
//! .ci/run, whose setup installs Debian's chromium), where they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pjc-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pjc(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pjc")).current_dir(repo()).args(args).output().unwrap();
    assert!(o.status.success(), "pjc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The browser, or `None` (with a message) when there is none and none is required.
fn browser() -> Option<PathBuf> {
    let required = std::env::var("PJC_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    let named = std::env::var_os("PJC_CHROMIUM").filter(|p| !p.is_empty()).map(PathBuf::from);
    let found = named.or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"].into_iter().find_map(|b| {
            let o = Command::new("sh").args(["-c", &format!("command -v {b}")]).output().ok()?;
            o.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        })
    });
    match found {
        Some(b) => Some(b),
        None if required => panic!("PJC_REQUIRE_BROWSER=1 but no Chromium: install Debian's chromium (scripts/setup.sh does with PJC_REQUIRE_BROWSER=1) or set PJC_CHROMIUM"),
        None => {
            eprintln!("skipped: no Chromium here (apt-get install chromium, or PJC_CHROMIUM=PATH); CI requires it (PJC_REQUIRE_BROWSER=1)");
            None
        }
    }
}

/// The page's DOM after its script ran, and Chromium's log.
fn load(browser: &Path, page: &Path, dir: &Path) -> (String, String) {
    let profile = dir.join("chromium-profile");
    let o = Command::new("timeout")
        .args(["--signal=KILL", "120"])
        .arg(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "chromium failed on {}:\n{log}", page.display());
    (String::from_utf8(o.stdout).unwrap(), log)
}

/// The text of an HTML fragment: tags dropped, entities decoded.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&nbsp;", " ").replace("&amp;", "&")
}

/// Every `<tag class="class" ...>...</tag>` element of the DOM, whole.
fn elements<'a>(dom: &'a str, tag: &str, class: &str) -> Vec<&'a str> {
    let open = format!("<{tag} class=\"{class}\"");
    let close = format!("</{tag}>");
    let mut out = vec![];
    let mut rest = dom;
    while let Some(at) = rest.find(&open) {
        let end = rest[at..].find(&close).map(|e| at + e + close.len()).expect("closed element");
        out.push(&rest[at..end]);
        rest = &rest[end..];
    }
    out
}

/// The cells of one table row: each `<td>`'s inner HTML.
fn cells(row: &str) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = row;
    while let Some(at) = rest.find("<td") {
        let start = at + rest[at..].find('>').unwrap() + 1;
        let end = start + rest[start..].find("</td>").unwrap();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

/// The inner text of the element with `id`.
fn by_id(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find("</").unwrap();
    text_of(&dom[start..end])
}

/// The rendered page: the script finished and reported no error.
fn assert_rendered(dom: &str, log: &str, what: &str) {
    let body_at = dom.find("<body").expect("a body");
    let body = &dom[body_at..body_at + dom[body_at..].find('>').unwrap()];
    assert!(!body.contains("data-errors"), "{what}: script errors: {}", by_id(dom, "errors"));
    assert!(body.contains("data-rendered=\"ok\""), "{what}: the script did not finish: {body}\n{log}");
    assert!(!log.contains("Uncaught"), "{what}: an uncaught exception in the console:\n{log}");
}

/// The page needs nothing from the network: no external scripts, styles,
/// images or links; the one URL is the SVG namespace (a name, not fetched).
fn assert_self_contained(html: &str) {
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"), "a URL in the page");
    assert!(!html.contains("<link") && !html.contains(" src="), "an external resource in the page");
}

/// Rows of `pjc explain`'s value table for `@func`: name, global, sharding, per device, why.
fn text_values(text: &str, func: &str) -> Vec<[String; 5]> {
    let mut lines = text.lines().skip_while(|l| *l != format!("func @{func}")).skip(2);
    let mut rows = vec![];
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        // Columns are padded: split at runs of two or more spaces.
        let mut cols: Vec<String> = vec![];
        let mut rest = l.trim_start();
        for _ in 0..4 {
            let end = rest.find("  ").unwrap_or(rest.len());
            cols.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
        cols.push(rest.to_string());
        rows.push([cols[0].clone(), cols[1].clone(), cols[2].clone(), cols[3].clone(), cols[4].clone()]);
    }
    rows
}

/// `(value, op, axes, bytes, reason)` of the text's collectives section, and its total.
fn text_collectives(text: &str) -> (Vec<[String; 5]>, Option<String>) {
    let mut rows = vec![];
    let mut total = None;
    for l in text.lines().skip_while(|l| !l.starts_with("collectives inserted")).skip(1) {
        if l.is_empty() || l == "  none" {
            break;
        }
        if let Some(t) = l.strip_prefix("  total: ") {
            total = Some(t.rsplit(", ").next().unwrap().trim_end_matches(" B per device").to_string());
            break;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        let over = l.find("over [").unwrap() + "over [".len();
        let axes = &l[over..over + l[over..].find(']').unwrap()];
        let after = &l[over + l[over..].find(']').unwrap() + 1..].trim_start();
        let (bytes, reason) = after.split_once(" B  ").unwrap();
        rows.push([w[0].to_string(), w[1].to_string(), axes.to_string(), bytes.trim().to_string(), reason.to_string()]);
    }
    (rows, total)
}

/// The numbers the browser shows equal the text's, for one program.
fn check_page(browser: &Path, dir: &Path, args: &[&str], html: &Path) -> (String, String) {
    let text = pjc(&[&["explain"], args, &["--html", html.to_str().unwrap()]].concat());
    let page = std::fs::read_to_string(html).unwrap();
    assert_self_contained(&page);
    let (dom, log) = load(browser, html, dir);
    assert_rendered(&dom, &log, &format!("{args:?}"));
    // Every value of @main, as the text's table has it.
    let want = text_values(&text, "main");
    assert!(!want.is_empty(), "no value table in:\n{text}");
    let got: Vec<Vec<String>> = elements(&dom, "tr", "val").into_iter().filter(|r| r.contains("data-func=\"main\"")).map(|r| cells(r).into_iter().map(|c| c.to_string()).collect()).collect();
    assert_eq!(got.len(), want.len(), "{args:?}: values");
    for (w, g) in want.iter().zip(&got) {
        let why = text_of(g[7].split("<details").next().unwrap());
        let shown = [text_of(&g[0]), text_of(&g[2]), text_of(&g[3]), text_of(&g[4]), why];
        assert_eq!(&shown, w, "{args:?}: a value row");
    }
    // Every collective: value, op, group axes, bytes, reason; the total.
    let (want, total) = text_collectives(&text);
    let rows = elements(&dom, "tr", "coll");
    assert_eq!(rows.len(), want.len(), "{args:?}: collectives");
    let src = std::fs::read_to_string(repo().join(args[0])).unwrap();
    let source: Vec<&str> = src.lines().collect();
    for (w, r) in want.iter().zip(&rows) {
        let c = cells(r);
        let shown = [text_of(c[0]), text_of(c[1]), text_of(c[2]), text_of(c[4]), text_of(c[6])];
        assert_eq!(&shown, w, "{args:?}: a collective row");
        // The served value links to the source line that defines it.
        if let Some(at) = c[5].find("href=\"#L") {
            let n: usize = c[5][at + 8..].split('"').next().unwrap().parse().unwrap();
            let served = text_of(c[5]);
            let name = served.trim_start_matches('%').trim_start_matches("result '").trim_end_matches('\'');
            assert!(source[n - 1].contains(name), "{args:?}: {served} links to line {n}: {}", source[n - 1]);
            assert!(dom.contains(&format!("id=\"L{n}\"")), "no line anchor {n}");
        }
    }
    if let Some(total) = total {
        let t = cells(elements(&dom, "tr", "total")[0]).into_iter().map(text_of).collect::<Vec<_>>();
        assert_eq!(t[4], total, "{args:?}: collectives' total");
    }
    // The kernel plan's counts and the peak memory.
    let plan_line = text.lines().find(|l| l.starts_with("kernel plan: ")).unwrap();
    if !plan_line.contains("not available") {
        let n: Vec<&str> = plan_line["kernel plan: ".len()..].split(", ").map(|p| p.split(' ').next().unwrap()).collect();
        assert_eq!([by_id(&dom, "count-kernels"), by_id(&dom, "count-library"), by_id(&dom, "count-collectives")], [n[0], n[1], n[2]], "{args:?}: {plan_line}");
        let peak = text.lines().find_map(|l| l.strip_prefix("peak memory per device: ")).unwrap().split(' ').next().unwrap();
        assert_eq!(by_id(&dom, "peak"), peak, "{args:?}: peak memory");
        let fullest = text.lines().find(|l| l.starts_with("most memory live at once: ")).unwrap();
        assert!(text_of(&dom).contains(fullest), "{args:?}: no '{fullest}' on the page");
        assert_eq!(elements(&dom, "tr", "step").len(), page.matches("\"cuda\":").count(), "{args:?}: steps");
    }
    (text, dom)
}

/// The labels of a box-drawn grid (`pjc explain --value`), row by row.
fn text_grid(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.contains('│'))
        .map(|l| {
            let inner = &l[l.find('│').unwrap() + '│'.len_utf8()..];
            inner.split('│').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
        })
        .collect()
}

/// The labels of the page's grid of `value`, row by row.
fn page_grid(dom: &str, value: &str) -> Vec<Vec<String>> {
    let at = dom.find(&format!("<table class=\"grid\" data-value=\"{value}\"")).unwrap_or_else(|| panic!("no grid of {value} on the page"));
    let table = &dom[at..at + dom[at..].find("</table>").unwrap()];
    table.split("<tr").skip(1).map(|r| elements(r, "td", "cell").into_iter().map(text_of).collect::<Vec<_>>()).filter(|r| !r.is_empty()).collect()
}

#[test]
fn pages_show_explains_numbers_in_a_browser() {
    let Some(b) = browser() else { return };
    let dir = scratch("pages");
    // Megatron's MLP (partial sums), two axes with tile pictures, the GPT block
    // stack (long explanation chains, 47 collectives), a scan (control flow).
    for (k, args) in [
        vec!["tests/text/explain/partial_sums.pir"],
        vec!["tests/text/explain/tiles_two_axes.pir"],
        vec!["examples/jax_gpt/gpt.pir"],
        vec!["examples/rnn_scan.pir"],
        vec!["tests/text/explain/halo_bytes.pir"],
    ]
    .into_iter()
    .enumerate()
    {
        let html = dir.join(format!("page{k}.html"));
        let (_, dom) = check_page(&b, &dir, &args, &html);
        // The grids the page draws are --value's.
        for v in ["%y", "%w1", "%params_layers_0_w1", "%tokens"] {
            if dom.contains(&format!("<table class=\"grid\" data-value=\"{v}\"")) {
                let want = text_grid(&pjc(&["explain", args[0], "--value", v]));
                assert!(!want.is_empty());
                assert_eq!(page_grid(&dom, v), want, "{args:?}: the grid of {v}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compile_report_is_explains_page() {
    let dir = scratch("compile");
    let prog = "tests/text/explain/partial_sums.pir";
    let (a, b) = (dir.join("explain.html"), dir.join("compile.html"));
    pjc(&["explain", prog, "--html", a.to_str().unwrap()]);
    pjc(&["compile", prog, "--report", b.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap());
    // With --emit, the emitted form still goes to stdout.
    let out = pjc(&["compile", prog, "--emit", "spmd", "--report", b.to_str().unwrap()]);
    assert!(out.contains("all_reduce"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_runs_trace_is_split_per_rank_in_text_and_page() {
    let dir = scratch("trace");
    let prog = "tests/text/explain/partial_sums.pir";
    let exe = dir.join("mlp.bin");
    pjc(&["compile", prog, "--mesh", "model=2", "--target", "cpu", "-o", exe.to_str().unwrap()]);
    let mut args: Vec<String> = vec![];
    for (name, shape) in [("x", vec![8usize, 32]), ("w1", vec![32, 64]), ("w2", vec![64, 32])] {
        let n: usize = shape.iter().product();
        let t = pjc_tensor::Tensor::new(shape, pjc_tensor::Buf::F32((0..n).map(|i| ((i % 7) as f32) * 0.1).collect()));
        let path = dir.join(format!("{name}.npy"));
        pjc_tensor::write_npy(&path, &t).unwrap();
        args.extend(["--input".to_string(), format!("{name}={}", path.display())]);
    }
    let trace = dir.join("trace.json");
    args.extend(["--trace".to_string(), trace.display().to_string(), "--output".into(), dir.join("out.safetensors").display().to_string()]);
    common::mpirun_ok(2, &exe, &args, 120);
    // The text's split is the trace's own events summed per rank and track.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let html = dir.join("report.html");
    let text = pjc(&["explain", prog, "--mesh", "model=2", "--trace", trace.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("  rank ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    for (r, line) in lines.iter().enumerate() {
        let sum = |cat: &str, tid: u64| -> f64 {
            events.iter().filter(|e| e["ph"] == "X" && e["pid"].as_u64() == Some(r as u64) && e["cat"] == cat && e["tid"].as_u64() == Some(tid)).map(|e| e["dur"].as_f64().unwrap()).fold(0.0, |a, b| a + b)
        };
        let compute = sum("kernel", 0) + sum("gemm", 0) + sum("library", 0);
        let d = |us: f64| pjc_plan::cost::duration_text(us * 1e-6);
        assert!(compute > 0.0, "rank {r}: no compute events");
        let want = format!("  rank {r}: step {}: compute {}, collectives {}, waiting {}, other {}", d(sum("step", 0)), d(compute), d(sum("collective", 0)), d(sum("wait", 0)), d(sum("copy", 0) + sum("io", 0)));
        assert!(line.starts_with(&want), "{line}\nwant {want}");
    }
    // The page shows the same per rank.
    let Some(b) = browser() else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let (dom, log) = load(&b, &html, &dir);
    assert_rendered(&dom, &log, "the trace page");
    let rows = elements(&dom, "tr", "rank");
    assert_eq!(rows.len(), 2);
    for (r, (row, line)) in rows.iter().zip(&lines).enumerate() {
        let c: Vec<String> = cells(row).into_iter().map(text_of).collect();
        let want = format!("  rank {r}: step {}: compute {}, collectives {}, waiting {}, other {}", c[1], c[2], c[3], c[4], c[5]);
        assert!(line.starts_with(&want), "page: {want}\ntext: {line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
