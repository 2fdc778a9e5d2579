//! The HTML report in a real browser: headless Chromium loads the report of
//! the synthetic fixture (every chart type) and of a real run. Checks: no
//! console messages (errors or otherwise; the report has no scripts), no
//! network request from the page (all traffic goes to a local recording
//! proxy; Chromium's own background calls to Google services, which it
//! makes whatever the page, are told apart by host), every chart in the
//! browser's DOM has all its data points,
//! and a screenshot is kept as a test artifact. Skips, saying why, when
//! Chromium is not installed (apt package `chromium`).

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Run chromium with `args` on `url`, killing it after 120 s. (stdout, stderr)
fn run_chromium(
    bin: &Path,
    profile: &Path,
    proxy_port: u16,
    args: &[String],
    url: &str,
) -> (String, String) {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-default-apps",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{proxy_port}"))
        .arg("--proxy-bypass-list=<-loopback>")
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (t_out.join().unwrap(), t_err.join().unwrap())
}

/// `must_have`: text the rendered DOM must contain (section ids, chart
/// titles of the charts the fixture is there for). Returns the DOM.
fn check_report(bin: &Path, fixture: &str, shot_name: &str, must_have: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let html = tmp.path().join("report.html");
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["report"])
        .arg(root.join("tests/fixtures/report").join(fixture))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let source = std::fs::read_to_string(&html).unwrap();
    // Statically too: nothing in the page points outside it.
    for attr in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "url(http",
        "@import",
    ] {
        assert!(
            !source.contains(attr),
            "{fixture}: the report references something external ({attr})"
        );
    }
    // The page as the browser lays it out, with a script that measures
    // every chart's texts (the report itself has none): `check_readable`.
    let measured = tmp.path().join("measured.html");
    std::fs::write(
        &measured,
        source.replace("</body>", &format!("{OVERLAP_PROBE}</body>")),
    )
    .unwrap();
    let url = format!("file://{}", measured.display());
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    proxy.set_nonblocking(true).unwrap();
    let port = proxy.local_addr().unwrap().port();
    // The proxy records the first line of every request and answers nothing.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let recorder = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match proxy.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
                        let mut buf = [0u8; 512];
                        let n = c.read(&mut buf).unwrap_or(0);
                        let line = String::from_utf8_lossy(&buf[..n])
                            .lines()
                            .next()
                            .unwrap_or("")
                            .to_string();
                        seen.lock().unwrap().push(line);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        })
    };

    let (dom, log) = run_chromium(
        bin,
        &tmp.path().join("profile"),
        port,
        &["--dump-dom".into()],
        &url,
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(dom.contains("</html>"), "no DOM dumped; stderr: {log}");
    check_readable(&dom, fixture);
    for want in must_have {
        assert!(
            dom.contains(want),
            "{fixture}: '{want}' not in the rendered page"
        );
    }
    // Every chart the browser parsed has all its data points.
    let charts_src = source.matches("<svg").count();
    let mut charts = 0;
    for svg in dom.split("<svg").skip(1) {
        let svg = svg.split("</svg>").next().unwrap();
        let n: usize = svg
            .split("data-points=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .and_then(|t| t.parse().ok())
            .expect("chart without data-points");
        assert!(n > 0, "an empty chart");
        assert_eq!(
            svg.matches("class=\"pt\"").count(),
            n,
            "points lost in a chart"
        );
        charts += 1;
    }
    assert_eq!(charts, charts_src, "every chart reached the DOM");
    assert!(charts >= 3, "{fixture}: {charts} charts");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join(shot_name);
    let _ = std::fs::remove_file(&shot);
    let (_, log) = run_chromium(
        bin,
        &tmp.path().join("profile"),
        port,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1100,2400".into(),
        ],
        &url,
    );
    let len = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        len > 10_000,
        "screenshot missing or blank ({len} bytes); stderr: {log}"
    );
    eprintln!("screenshot kept: {}", shot.display());

    stop.store(true, Ordering::SeqCst);
    recorder.join().unwrap();
    // Only Chromium's own service calls reached the proxy: the report loads nothing.
    let seen = seen.lock().unwrap();
    // A connection that sent nothing (a speculative preconnect) is no request.
    let page: Vec<&String> = seen
        .iter()
        .filter(|l| !l.trim().is_empty() && !is_browser_service(l))
        .collect();
    assert!(page.is_empty(), "network requests from the page: {page:?}");
    eprintln!(
        "{fixture}: {} background request(s) of Chromium itself ignored",
        seen.len()
    );
    dom
}

/// The section `id` of a rendered DOM.
/// Finds, in every chart, pairs of texts whose drawn boxes (rotation
/// included: each text's box through its transform, compared by separating
/// axes) overlap by more than 1.5 px, and texts that run past the chart's
/// edge, and lists them in `<pre id="overlaps">`.
const OVERLAP_PROBE: &str = r#"<script>
(function(){
 function quad(t){var b=t.getBBox(),m=t.getCTM();if(!m||b.width==0)return null;
  var pts=[[b.x,b.y],[b.x+b.width,b.y],[b.x+b.width,b.y+b.height],[b.x,b.y+b.height]];
  return pts.map(function(p){return [m.a*p[0]+m.c*p[1]+m.e, m.b*p[0]+m.d*p[1]+m.f];});}
 function axes(q){var r=[];for(var i=0;i<4;i++){var a=q[i],b=q[(i+1)%4];r.push([-(b[1]-a[1]),b[0]-a[0]]);}return r;}
 function proj(q,ax){var mn=1e9,mx=-1e9;q.forEach(function(p){var v=p[0]*ax[0]+p[1]*ax[1];mn=Math.min(mn,v);mx=Math.max(mx,v);});return [mn,mx];}
 function overlap(a,b){var all=axes(a).concat(axes(b));var depth=1e9;
  for(var i=0;i<all.length;i++){var ax=all[i],l=Math.hypot(ax[0],ax[1]);if(l==0)continue;ax=[ax[0]/l,ax[1]/l];
   var p=proj(a,ax),q=proj(b,ax);var d=Math.min(p[1],q[1])-Math.max(p[0],q[0]);if(d<=0)return 0;depth=Math.min(depth,d);}return depth;}
 var out=[];
 document.querySelectorAll('svg').forEach(function(svg,si){
   var title=(svg.querySelector('text[font-weight="bold"]')||{}).textContent||('svg'+si);
   var ts=Array.from(svg.querySelectorAll('text')).map(function(t){return {t:t.textContent,q:quad(t)};}).filter(function(o){return o.q;});
   var vb=svg.viewBox.baseVal;
   ts.forEach(function(o){o.q.forEach(function(p){if(vb&&vb.width&&(p[0]<-1.5||p[0]>vb.width+1.5||p[1]<-1.5||p[1]>vb.height+1.5))o.out=true;});if(o.out)out.push(title+' | '+o.t+' | cut off at the chart edge');});
   for(var i=0;i<ts.length;i++)for(var j=i+1;j<ts.length;j++){
     var d=overlap(ts[i].q,ts[j].q);
     if(d>1.5) out.push(title+' | '+ts[i].t+' | '+ts[j].t+' | '+d.toFixed(1));
   }
 });
 var pre=document.createElement('pre');pre.id='overlaps';pre.textContent=out.join('\n');document.body.appendChild(pre);
})();
</script>"#;

/// What a reader must be able to read in every chart of a rendered page
/// (issue 48): a chart over time has at least 3 points on every line (one
/// or two drew a single dot), and no chart's legend repeats an entry (the
/// main job's QD32 chart read "randread 4k qd32" six times), and no text
/// is drawn over another (`OVERLAP_PROBE`: the knee's sentence crossed the
/// curves, 50 category labels at -40 degrees overlapped), and no latency
/// column shows a 0 that was never measured. Failures name the chart.
fn check_readable(dom: &str, fixture: &str) {
    let mut failures = Vec::new();
    let overlaps = dom
        .split_once("<pre id=\"overlaps\">")
        .map(|(_, rest)| rest.split("</pre>").next().unwrap_or(""))
        .expect("the overlap probe ran");
    failures.extend(
        overlaps
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("texts overlap: {l}")),
    );
    for chart in dom.split("<svg").skip(1) {
        let chart = chart.split("</svg>").next().unwrap_or(chart);
        let title = chart
            .split("font-weight=\"bold\">")
            .nth(1)
            .and_then(|t| t.split('<').next())
            .unwrap_or("?");
        let series: Vec<&str> = chart.split("class=\"series\"").skip(1).collect();
        let labels: Vec<&str> = series
            .iter()
            .filter_map(|s| s.split_once("data-label=\"")?.1.split('"').next())
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for l in &labels {
            if !seen.insert(*l) {
                failures.push(format!("'{title}': legend entry '{l}' repeats"));
            }
        }
        if chart.contains(">time (s)<") {
            for (s, l) in series.iter().zip(&labels) {
                let line = s.split("</g>").next().unwrap_or(s);
                let points = line.matches("class=\"pt\"").count();
                if points < 3 {
                    failures.push(format!("'{title}': '{l}' has {points} point(s) over time"));
                }
            }
        }
    }
    failures.extend(unmeasured_zeros(dom));
    assert!(failures.is_empty(), "{fixture}: {failures:#?}");
}

/// Cells of a latency column that read 0: no request takes 0 ns, so a 0
/// there was never measured (older kv and oltp files wrote a second's
/// p99 as 0). The breakdown's residual is a difference (the total minus
/// its stages, 0 when they account for all of it) and may be 0.
fn unmeasured_zeros(dom: &str) -> Vec<String> {
    let text = |cell: &str| -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for ch in cell.chars() {
            match ch {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.trim().to_string()
    };
    let cells = |row: &str, tag: &str| -> Vec<String> {
        row.split(&format!("<{tag}"))
            .skip(1)
            // `<th` also starts `<thead>`.
            .filter(|c| c.starts_with('>') || c.starts_with(' '))
            .map(|c| {
                text(
                    c.split_once('>')
                        .map_or("", |x| x.1)
                        .split(&format!("</{tag}>"))
                        .next()
                        .unwrap_or(""),
                )
            })
            .collect()
    };
    let latency = |h: &str| {
        let h = h.to_lowercase();
        ["latency", "p99", "p95", "p50", "mean"]
            .iter()
            .any(|w| h.contains(w))
            || h.split(|c: char| !c.is_alphanumeric())
                .any(|w| ["ns", "us", "ms"].contains(&w))
    };
    let mut out = Vec::new();
    for table in dom.split("<table").skip(1) {
        let table = table.split("</table>").next().unwrap_or(table);
        let heads = cells(table, "th");
        for row in table.split("<tr").skip(1) {
            let row = cells(row, "td");
            if row.iter().any(|c| c == "residual") {
                continue;
            }
            for (i, h) in heads.iter().enumerate().filter(|(_, h)| latency(h)) {
                if row
                    .get(i)
                    .is_some_and(|c| ["0", "0ns", "0.0", "0.00"].contains(&c.as_str()))
                {
                    out.push(format!(
                        "a latency of 0 in '{h}': {:?}",
                        &row[..row.len().min(3)]
                    ));
                }
            }
        }
    }
    out
}

fn section<'d>(dom: &'d str, id: &str) -> &'d str {
    let from = dom
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let to = dom[from..]
        .find("</section>")
        .map_or(dom.len(), |i| from + i);
    &dom[from..to]
}

/// Chromium's component updater, time and account services (not the page).
fn is_browser_service(request_line: &str) -> bool {
    let target = request_line.split_whitespace().nth(1).unwrap_or("");
    let host = target
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    [
        "google.com",
        "googleapis.com",
        "gvt1.com",
        "gstatic.com",
        "googleusercontent.com",
    ]
    .iter()
    .any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

/// Chromium, or `None` after saying why `test` skips.
fn chromium_for(test: &str) -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        eprintln!("SKIP {test}: chromium is not installed (apt-get install chromium)");
    }
    bin
}

// The reports are checked by four tests that libtest runs side by side
// (each page in a directory, browser profile and proxy of its own: nothing
// is shared but the screenshot directory, where the names differ).

#[test]
fn run_fio_and_trace_reports_in_headless_chromium() {
    let Some(bin) = chromium_for("run_fio_and_trace_reports_in_headless_chromium") else {
        return;
    };
    check_report(
        &bin,
        "synthetic-all.json",
        "synthetic-all.png",
        &[
            "Latency by percentile (QD",
            "Latency CDF (QD",
            "Machine CPU",
            "id=\"steady-state\"",
        ],
    );
    check_report(
        &bin,
        "run-standard.json",
        "run-standard.png",
        &["id=\"batching\""],
    );
    check_report(
        &bin,
        "fio-jsonplus-2jobs.json",
        "fio-jsonplus.png",
        &[
            "id=\"cdf\"",
            "Completion latency (clat",
            "CPU time of the fio job",
        ],
    );
    check_report(
        &bin,
        "trace-sample.json",
        "trace-sample.png",
        &["id=\"breakdown\""],
    );
    check_report(
        &bin,
        "run-all-steps.json",
        "run-all-steps.png",
        &["id=\"load-latency\""],
    );
}

#[test]
fn device_reports_in_headless_chromium() {
    let Some(bin) = chromium_for("device_reports_in_headless_chromium") else {
        return;
    };
    check_report(
        &bin,
        "device-loadlat.json",
        "device-loadlat.png",
        &["id=\"load-latency\"", "Process CPU per point"],
    );
    check_report(
        &bin,
        "device-steady.json",
        "device-steady.png",
        &["id=\"steady-state\""],
    );
    check_report(&bin, "device-snia-iops.json", "device-snia-iops.png", &[]);
    // A sweep with batching.
    check_report(
        &bin,
        "device-batching.json",
        "device-batching.png",
        &["Batching speedup vs batch size k", "id=\"percentiles\""],
    );
}

#[test]
fn kv_and_remote_reports_in_headless_chromium() {
    let Some(bin) = chromium_for("kv_and_remote_reports_in_headless_chromium") else {
        return;
    };
    check_report(
        &bin,
        "kv-ycsb-rocksdb.json",
        "kv-ycsb.png",
        &["id=\"kv-throughput\"", "id=\"kv-latency\""],
    );
    check_report(
        &bin,
        "kv-postgres.json",
        "kv-postgres.png",
        &[
            "id=\"kv-server\"",
            "id=\"kv-under\"",
            "Machine CPU over time",
        ],
    );
    // One load of the remote page for its sections and its legends
    // (`check_remote_legends`).
    let dom = check_report(
        &bin,
        "remote-nbd.json",
        "remote-nbd.png",
        &[
            "id=\"remote\"",
            "id=\"remote-cpu\"",
            "id=\"remote-breakdown\"",
            "id=\"remote-db\"",
            "id=\"load-latency\"",
            "Load-latency p95, every transport",
        ],
    );
    check_remote_legends(&dom);
}

#[test]
fn oltp_and_media_reports_in_headless_chromium() {
    let Some(bin) = chromium_for("oltp_and_media_reports_in_headless_chromium") else {
        return;
    };
    check_media(&bin);
    // One load of the oltp page for its timelines and its legends.
    let dom = check_report(
        &bin,
        "oltp-postgres.json",
        "oltp-postgres.png",
        &[
            "id=\"oltp-tps\"",
            "id=\"oltp-nopm\"",
            "id=\"oltp-server\"",
            "Machine CPU over time",
            "Disk bandwidth over time",
        ],
    );
    check_timelines(&dom);
    check_oltp_legends(&dom);
}

/// The legends a reader compares by (issue 31 item 17): in the oltp
/// report (`dom`, rendered) every series has a colour of its own and every
/// user count a legend entry in full.
fn check_oltp_legends(dom: &str) {
    for id in ["oltp-tps", "oltp-nopm"] {
        let chart = section(dom, id);
        // A legend entry is a line of its colour, then its text (the DOM
        // writes the line as `<line ...></line>`, the source as `<line .../>`).
        let pieces: Vec<&str> = chart.split("<text").collect();
        let colours: Vec<&str> = pieces[..pieces.len() - 1]
            .iter()
            .filter_map(|p| {
                let last = p.rsplit_once("<line")?.1;
                let tag = last
                    .strip_suffix("></line>")
                    .or_else(|| last.strip_suffix("/>"))?;
                let legend_line = tag.contains("stroke-width=\"2\"") && !tag.contains('<');
                legend_line.then(|| tag.split_once("stroke=\"")?.1.split('"').next())?
            })
            .collect();
        assert!(colours.len() >= 2, "{id}: legend lines {colours:?}");
        let mut distinct = colours.to_vec();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            colours.len(),
            "{id}: colours repeat {colours:?}"
        );
    }
    let tps = section(dom, "oltp-tps");
    for users in ["1 users", "2 users"] {
        assert!(
            tps.contains(&format!("<title>{users}</title>")),
            "no legend entry for {users}"
        );
    }
}

/// In the remote report (`dom`, rendered) every transport is named in the
/// p95 load-latency chart and the breakdown's categories start with DAS.
fn check_remote_legends(dom: &str) {
    let study = section(dom, "remote-study");
    let p95 = study.split_once("Load-latency p95").unwrap().1;
    for t in ["das", "nbd-iolab", "nvme-tcp-iolab", "nbd-nbdkit-memory"] {
        assert!(
            p95.contains(&format!("{t} p95")),
            "{t} not in the p95 legend"
        );
    }
}

/// The timelines of a real oltp run on a private PostgreSQL (the load and
/// two points): in the browser's DOM (`dom`, that page rendered) each timeline section has a chart
/// per phase of at least 3 intervals, the CPU chart with its four machine lines and the server's,
/// and every second of the phase drawn on every line.
fn check_timelines(dom: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("oltp-postgres.json")).unwrap())
            .unwrap();
    let mut seconds = vec![results["extra"]["oltp_load"]["timeline"]["t_s"]
        .as_array()
        .unwrap()
        .len()];
    for p in results["points"].as_array().unwrap() {
        seconds.push(p["extra"]["timeline"]["t_s"].as_array().unwrap().len());
    }
    // A phase of fewer than 3 intervals has no chart, only table rows.
    seconds.retain(|&n| n >= 3);
    for (id, lines) in [
        ("timeline-cpu", 5),
        ("timeline-disk", 2),
        ("timeline-iops", 2),
        ("timeline-client", 1),
    ] {
        let charts: Vec<&str> = section(dom, id).split("<svg").skip(1).collect();
        assert_eq!(
            charts.len(),
            seconds.len(),
            "{id}: a chart per phase of 3 intervals or more"
        );
        for (c, n) in charts.iter().zip(&seconds) {
            assert_eq!(c.matches("class=\"series\"").count(), lines, "{id}");
            assert_eq!(c.matches("class=\"pt\"").count(), n * lines, "{id}");
        }
    }
    let cpu = section(dom, "timeline-cpu");
    for line in ["user", "system", "iowait", "idle", "server usr+sys"] {
        assert!(
            cpu.contains(&format!("class=\"series\" data-label=\"{line}\"")),
            "no {line} line"
        );
    }
}

/// The media sections of a real run over four targets and two workloads
/// (three rounds): in the browser's DOM, the throughput chart has a bar
/// and a whisker per workload and target and a noise mark per row the
/// analysis marks; each workload's CDF has a line per target.
fn check_media(bin: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("media.json")).unwrap()).unwrap();
    let m = &results["analysis"]["media"];
    let targets: Vec<&str> = m["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let workloads = m["workloads"].as_array().unwrap().len();
    let noisy = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["noise"] == true)
        .count();
    let dom = check_report(
        bin,
        "media.json",
        "media.png",
        &[
            "id=\"media\"",
            "id=\"media-latency\"",
            "Throughput relative to a",
        ],
    );
    let bars = section(&dom, "media");
    let first = bars.split("</svg>").next().unwrap();
    assert_eq!(
        first.matches("class=\"pt\"").count(),
        workloads * targets.len()
    );
    assert_eq!(
        first.matches("class=\"whisker\"").count(),
        workloads * targets.len()
    );
    assert!(noisy > 0);
    assert_eq!(first.matches("class=\"noise-mark\"").count(), noisy);
    for t in &targets {
        assert!(
            first.contains(&format!(">{t}</text>")),
            "{t} not in the legend"
        );
    }
    let cdfs = section(&dom, "media-latency");
    let charts: Vec<&str> = cdfs.split("<svg").skip(1).collect();
    assert_eq!(charts.len(), workloads, "one CDF per workload");
    for c in charts {
        for t in &targets {
            assert!(
                c.contains(&format!("class=\"series\" data-label=\"{t}\"")),
                "no line of {t}"
            );
        }
    }
}
