//! The typed Python stubs of `GET /v1/code/stubs` (code mode's view of the tools), read by
//! real Python: `serve` with the example catalog; every module compiles and imports (with a
//! `toolsmith_runtime` written here that records calls), a function's signature says what
//! its schema says (`from` as `from_`, an `enum` as `Literal`, a default kept, the output
//! schema a `TypedDict`), a call sends the schema's names and leaves out optional arguments
//! not given, the async twins run under `asyncio.gather`, a toolset narrows the modules, and
//! one module comes as `text/x-python`.

mod common;

use std::process::Command;

use common::{get, repo, request, serve};
use serde_json::Value;

const PROBE: &str = r#"
import asyncio, inspect, json, sys
sys.path.insert(0, sys.argv[1])
import toolsmith_runtime
import tools

sig = inspect.signature(tools.convert_temperature)
stats = inspect.signature(tools.word_stats)
tools.convert_temperature(value=21.5, from_="celsius", to="kelvin")
tools.word_stats(text="a b a")

async def both():
    return await asyncio.gather(tools.word_stats_async(text="x", top=2),
                                tools.convert_temperature_async(value=0, from_="kelvin", to="celsius"))

asyncio.run(both())
print(json.dumps({
    "params": {name: str(p.annotation) for name, p in sig.parameters.items()},
    "kinds": sorted({str(p.kind) for p in sig.parameters.values()}),
    "top_default": stats.parameters["top"].default,
    "returns": str(stats.return_annotation),
    "result_class": sorted(tools.WordStatsResult.__annotations__),
    "doc": tools.word_stats.__doc__,
    "calls": toolsmith_runtime.calls,
}))
"#;

const RUNTIME: &str = r#"
calls = []

def call(name, arguments, optional=()):
    given = {k: v for k, v in arguments.items() if not (k in optional and v is None)}
    calls.append([name, given])
    return given

async def acall(name, arguments, optional=()):
    return call(name, arguments, optional)
"#;

#[test]
fn stubs_are_python_that_says_what_the_schemas_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );

    let all = get(&base, "/code/stubs");
    let modules = all["modules"].as_array().expect("modules");
    assert!(!modules.is_empty(), "{all}");
    let root = tempfile::tempdir().expect("tempdir");
    for m in modules {
        let path = root.path().join(m["path"].as_str().expect("path"));
        std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
        std::fs::write(&path, m["source"].as_str().expect("source")).expect("write");
    }
    std::fs::write(root.path().join("toolsmith_runtime.py"), RUNTIME).expect("write runtime");
    let out = Command::new("python3")
        .args(["-c", PROBE])
        .arg(root.path())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "the stubs did not run: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        modules[0]["source"]
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the probe's JSON");
    assert_eq!(seen["params"]["value"], "float", "{seen}");
    assert_eq!(
        seen["params"]["from_"], "Literal['celsius', 'fahrenheit', 'kelvin']",
        "{seen}"
    );
    assert_eq!(seen["kinds"], serde_json::json!(["KEYWORD_ONLY"]));
    assert_eq!(seen["top_default"], 5);
    assert_eq!(seen["returns"], "WordStatsResult");
    assert_eq!(
        seen["result_class"],
        serde_json::json!(["characters", "lines", "top_words", "words"])
    );
    assert!(
        seen["doc"]
            .as_str()
            .is_some_and(|d| d.contains("Count the words") && d.contains("top: How many")),
        "{seen}"
    );
    // Each call under the tool's served name with the schema's names; an optional argument
    // left out stays out (word_stats' `top` defaults to 5 in the stub, so it is sent).
    assert_eq!(
        seen["calls"],
        serde_json::json!([
            ["convert_temperature", {"value": 21.5, "from": "celsius", "to": "kelvin"}],
            ["word_stats", {"text": "a b a", "top": 5}],
            ["word_stats", {"text": "x", "top": 2}],
            ["convert_temperature", {"value": 0, "from": "kelvin", "to": "celsius"}],
        ])
    );

    // A toolset narrows them: `text` holds word_stats and convert_temperature, no file tool.
    let text = get(&base, "/code/stubs?toolset=text");
    let source: String = text["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .filter_map(|m| m["source"].as_str())
        .collect();
    assert!(
        source.contains("def word_stats(") && !source.contains("def read_file("),
        "{source}"
    );

    // One module as Python source; an unknown one is a 404.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let token = common::local_token(&base).expect("local token");
    let mut resp = agent
        .get(format!("{base}/code/stubs?module=tools"))
        .header("authorization", format!("Bearer {token}"))
        .call()
        .expect("GET one module");
    assert_eq!(resp.status().as_u16(), 200);
    let kind = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(kind.starts_with("text/x-python"), "{kind}");
    let body = resp.body_mut().read_to_string().expect("body");
    let whole = modules
        .iter()
        .find(|m| m["module"] == "tools")
        .expect("module tools");
    assert_eq!(body, whole["source"].as_str().expect("source"));
    let (status, missing) = request("GET", &format!("{base}/code/stubs?module=tools.nope"), None);
    assert_eq!(
        (status, missing["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{missing}"
    );
}
