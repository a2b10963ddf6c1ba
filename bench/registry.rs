//! Registry benchmarks (SPEC §6, §10): list and search pages with 100 000 tools, side by side
//! with the bare SQL query of the same page. Run with
//! `cargo bench -p toolsmith-store --bench registry` (`BENCH_TOOLS=N` for another size).

use std::time::{Duration, Instant};

use sqlx::Row;
use toolsmith_core::catalog::{self, TextSource};
use toolsmith_store::sqlite::SqliteStore;
use toolsmith_store::{Query, Store, StoreExt};

fn p(mut v: Vec<Duration>, q: f64) -> String {
    v.sort();
    let d = v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

async fn time<F: AsyncFnMut()>(n: usize, mut f: F) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        out.push(t.elapsed());
    }
    out
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:").map(|v| {
                v.trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse::<f64>()
                    .unwrap_or(0.0)
                    / 1024.0
            })
        })
        .unwrap_or(0.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::var("BENCH_TOOLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("registry.db");
    let store = SqliteStore::open(&path).await.expect("open");
    let template = catalog::load("c.yaml", &TextSource("tools: [{name: t, description: d, command: [grep], tags: [search], parameters: [{name: pattern}, {name: path, default: .}, {name: max, type: integer, default: 50, inject_as: option, option_name: --max-count}]}]".into()))
        .expect("template").tools.remove(0);
    let tools: Vec<_> = (0..n)
        .map(|i| {
            let mut t = template.clone();
            t.name =
                toolsmith_core::model::ToolName::new(&format!("tool_{i:06}"), Default::default())
                    .expect("name");
            t.description = if i % 1000 == 0 {
                format!("Fetch weather report {i}")
            } else {
                format!("Search files, variant {i}")
            };
            t
        })
        .collect();
    let started = Instant::now();
    store.import(&tools, false, "bench").await.expect("import");
    println!(
        "imported {n} tools in {:.1} s ({:.0} µs per tool, in transactions of {})",
        started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64() * 1e6 / n as f64,
        toolsmith_store::SYNC_BATCH
    );
    println!("process RSS with the registry open: {:.1} MiB", rss_mib());

    // The bare SQL of a page, as the baseline: no JSON decoding, no definition checking.
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("pool");
    let m = 200;
    println!("\n| what ({m} runs each) | p50 | p99 |\n|---|---|---|");
    let bare = time(m, async || {
        let rows = sqlx::query("SELECT name, definition FROM tools WHERE deleted = 0 AND enabled = 1 ORDER BY name LIMIT 51").fetch_all(&pool).await.expect("rows");
        assert_eq!(rows.len(), 51);
        std::hint::black_box(rows.iter().map(|r| r.get::<String, _>("definition").len()).sum::<usize>());
    }).await;
    println!(
        "| baseline: bare SQL of a 50-row page | {} | {} |",
        p(bare.clone(), 0.5),
        p(bare, 0.99)
    );
    let first = time(m, async || {
        let page = store
            .search(&Query {
                limit: 50,
                ..Query::default()
            })
            .await
            .expect("page");
        assert_eq!(page.items.len(), 50);
    })
    .await;
    println!(
        "| first page of 50 (tools decoded and checked) | {} | {} |",
        p(first.clone(), 0.5),
        p(first, 0.99)
    );
    let cursor = toolsmith_store::Query {
        limit: 50,
        cursor: Some("tool_090000".bytes().map(|b| format!("{b:02x}")).collect()),
        ..Query::default()
    };
    let deep = time(m, async || {
        let page = store.search(&cursor).await.expect("page");
        assert_eq!(page.items.len(), 50);
    })
    .await;
    println!(
        "| a page deep in the list (cursor at 90 000) | {} | {} |",
        p(deep.clone(), 0.5),
        p(deep, 0.99)
    );
    let text = time(m / 4, async || {
        let page = store
            .search(&Query {
                text: Some("weather".into()),
                limit: 50,
                ..Query::default()
            })
            .await
            .expect("page");
        assert_eq!(page.items.len(), 50.min(n / 1000));
    })
    .await;
    println!(
        "| search \"weather\" (substring of name, description, tags) | {} | {} |",
        p(text.clone(), 0.5),
        p(text, 0.99)
    );
    let common = time(m / 4, async || {
        let page = store
            .search(&Query {
                text: Some("variant 9".into()),
                limit: 50,
                ..Query::default()
            })
            .await
            .expect("page");
        assert_eq!(page.items.len(), 50.min(n / 10));
    })
    .await;
    println!(
        "| search \"variant 9\" (a common term: 11 111 matches) | {} | {} |",
        p(common.clone(), 0.5),
        p(common, 0.99)
    );
    let get = time(m, async || {
        store.get("tool_054321").await.expect("get");
    })
    .await;
    println!(
        "| get one tool by name | {} | {} |",
        p(get.clone(), 0.5),
        p(get, 0.99)
    );
}
