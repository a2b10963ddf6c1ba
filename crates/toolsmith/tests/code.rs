//! Code mode's `POST /v1/code/run` against a real `serve` with the example catalog: a program
//! imports the caller's tools as functions and calls them (sequentially and with
//! `asyncio.gather`) through the gateway — a sloppy argument repaired, invalid ones raising
//! with every problem, a tool outside the caller's toolset answering exactly as a missing
//! one, a dangerous tool refused unless confirmed for the program (nothing ran), every call
//! in the run log — and the program is held to its limits: an endless loop stopped at its
//! time, a memory bomb, huge output cut with a note, a fork bomb contained, 100 programs at
//! once. (Escapes through this door are in `tests/sandbox.rs`'s corpus.)

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Runs `code` (more fields in `extra`); the whole answer.
fn run(base: &str, query: &str, code: &str, extra: Value) -> Value {
    let mut body = json!({ "code": code });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let (status, answer) = request("POST", &format!("{base}/code/run{query}"), Some(body));
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The program's own result (it ran to its end).
fn ran(answer: &Value) -> &Value {
    assert_eq!(answer["result"]["success"], true, "{answer}");
    &answer["result"]["data"]
}

fn error_text(answer: &Value) -> String {
    ran(answer)["error"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_program_calls_its_callers_tools_through_the_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (_serve, base, _) = serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );

    // Sequential and parallel calls; "100" repaired to a number; print is the output and the
    // last expression the value.
    let program = r#"
import asyncio
from tools import convert_temperature, convert_temperature_async
hot = convert_temperature(value="100", from_="celsius", to="fahrenheit")
print("boiling:", hot["value"])
async def many():
    return await asyncio.gather(*[convert_temperature_async(value=i, from_="celsius", to="kelvin") for i in range(5)])
[round(r["value"], 2) for r in asyncio.run(many())]
"#;
    let answer = run(&base, "", program, json!({}));
    let data = ran(&answer);
    assert_eq!(data["output"], "boiling: 212.0\n", "{answer}");
    assert_eq!(
        data["value"],
        json!([273.15, 274.15, 275.15, 276.15, 277.15])
    );
    assert!(data["error"].is_null(), "{answer}");
    let calls = answer["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 6, "{answer}");
    assert!(
        calls
            .iter()
            .all(|c| c["tool"] == "convert_temperature" && c["outcome"] == "ok")
    );
    // Each inner call is in the run log with its id, and so is the program's own run.
    let (_, runs) = request(
        "GET",
        &format!("{base}/runs?tool=convert_temperature&limit=50"),
        None,
    );
    let logged: Vec<&str> = runs["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["call_id"].as_str())
        .collect();
    for call in calls {
        let id = call["call_id"].as_str().expect("call_id");
        assert!(logged.contains(&id), "{id} not in {runs}");
    }
    let (_, own) = request("GET", &format!("{base}/runs?tool=run_code"), None);
    assert_eq!(own["runs"].as_array().map(Vec::len), Some(1), "{own}");
    // Linked to it: the program's run names its calls, and they name it.
    let program = answer["result"]["meta"]["call_id"]
        .as_str()
        .expect("call_id");
    assert_eq!(own["runs"][0]["call_id"], program, "{own}");
    let (_, made) = request("GET", &format!("{base}/runs?parent={program}"), None);
    let made = made["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(made.len(), 6, "{made:?}");
    assert!(
        made.iter()
            .all(|r| r["parent_call_id"] == program && r["tool"] == "convert_temperature")
    );

    // An async twin imported on its own.
    let alone = run(
        &base,
        "",
        "import asyncio\nfrom tools import convert_temperature_async as c\nasyncio.run(c(value=0, from_='kelvin', to='kelvin'))['value']",
        json!({}),
    );
    assert_eq!(ran(&alone)["value"], 0.0, "{alone}");

    // Invalid arguments raise ToolError with every problem and its pointer; the program
    // can catch it.
    let answer = run(
        &base,
        "",
        "from tools import convert_temperature\nconvert_temperature(value='abc', from_='celsius', to='nope')",
        json!({}),
    );
    let error = error_text(&answer);
    assert!(error.contains("ToolError"), "{error}");
    assert!(
        error.contains("/to:") && error.contains("/value:"),
        "{error}"
    );
    let caught = run(
        &base,
        "",
        "import toolsmith_runtime\ntry:\n    toolsmith_runtime.call('convert_temperature', {'value': 'x'})\nexcept toolsmith_runtime.ToolError as e:\n    r = (e.kind, sorted(p['pointer'] for p in e.problems))\nr",
        json!({}),
    );
    assert_eq!(
        ran(&caught)["value"],
        json!(["invalid_arguments", ["/from", "/to", "/value"]]),
        "{caught}"
    );

    // A dangerous tool: refused unless the user confirmed it for this program; nothing ran.
    let write = "from tools import write_file\nwrite_file(path='note.txt', content='hi')";
    let answer = run(&base, "", write, json!({}));
    assert!(
        error_text(&answer).contains("needs_confirmation"),
        "{answer}"
    );
    assert!(!dir.path().join("note.txt").exists());
    let answer = run(&base, "", write, json!({"confirm": ["write_file"]}));
    assert!(ran(&answer)["error"].is_null(), "{answer}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt"))
            .ok()
            .as_deref(),
        Some("hi")
    );

    // Outside the caller's toolset a tool answers exactly as a missing one.
    let probe = |name: &str| {
        let code = format!(
            "import toolsmith_runtime\ntry:\n    toolsmith_runtime.call({name:?}, {{}})\nexcept toolsmith_runtime.ToolError as e:\n    r = (e.kind, e.message)\nr"
        );
        ran(&run(&base, "?toolset=text", &code, json!({})))["value"].clone()
    };
    let hidden = probe("write_file");
    let missing = probe("no_such_tool");
    assert_eq!(hidden[0], "not_found", "{hidden}");
    assert_eq!(
        hidden[1].as_str().map(|m| m.replace("write_file", "X")),
        missing[1].as_str().map(|m| m.replace("no_such_tool", "X")),
    );
    let imported = run(
        &base,
        "?toolset=text",
        "from tools import write_file",
        json!({}),
    );
    assert!(error_text(&imported).contains("ImportError"), "{imported}");
    let listed = run(
        &base,
        "?toolset=text",
        "import tools\nsorted(dir(tools))",
        json!({}),
    );
    let names: Vec<&str> = ran(&listed)["value"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"convert_temperature"), "{listed}");
    assert!(!names.contains(&"write_file"), "{listed}");
    // `import *` takes the same names (asked for only then: an import does not list them).
    let starred = run(
        &base,
        "?toolset=text",
        "from tools import *\nimport tools\n[callable(convert_temperature), sorted(tools.__all__) == sorted(dir(tools)), 'write_file' in globals()]",
        json!({}),
    );
    assert_eq!(
        ran(&starred)["value"],
        json!([true, true, false]),
        "{starred}"
    );
    // A caller narrowed to a toolset sees its own programs in the run log (run_code is no
    // member of any toolset), and only its own.
    let (status, log) = request(
        "GET",
        &format!("{base}/runs?toolset=text&tool=run_code"),
        None,
    );
    assert_eq!(status, 200, "{log}");
    let programs = log["runs"].as_array().cloned().unwrap_or_default();
    assert!(programs.len() >= 4, "{log}");
    let me = &programs[0]["caller"];
    assert!(programs.iter().all(|r| &r["caller"] == me), "{log}");

    // Limits: an endless loop is stopped at its time, a memory bomb fails, huge output is cut.
    let started = Instant::now();
    let answer = run(
        &base,
        "",
        "while True:\n    pass",
        json!({"timeout_ms": 2000}),
    );
    assert_eq!(answer["result"]["error"]["kind"], "timeout", "{answer}");
    assert!(started.elapsed() < Duration::from_secs(50));
    let answer = run(&base, "", "x = bytearray(4 * 1024 ** 3)", json!({}));
    assert!(error_text(&answer).contains("MemoryError"), "{answer}");
    let answer = run(&base, "", "print('a' * 200000)", json!({}));
    let data = ran(&answer);
    assert_eq!(data["cut"], true, "{answer}");
    let output = data["output"].as_str().unwrap_or_default();
    assert!(output.len() < 70_000, "{}", output.len());
    assert!(output.contains("more characters cut"), "{output:.100}");
    let (status, refused) = request(
        "POST",
        &format!("{base}/code/run"),
        Some(json!({"code": "1", "timeout_ms": 600000})),
    );
    assert_eq!(status, 400, "{refused}");

    // 100 programs at once, each calling a tool: every one answers, with its own value.
    let threads: Vec<_> = (0..100)
        .map(|i| {
            let base = base.clone();
            std::thread::spawn(move || {
                let code = format!(
                    "from tools import convert_temperature\nconvert_temperature(value={i}, from_='kelvin', to='kelvin')['value']"
                );
                let answer = run(&base, "", &code, json!({}));
                ran(&answer)["value"].as_f64()
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().expect("thread"), Some(i as f64));
    }
}

/// The processes below `pid` that are alive (zombies aside).
fn descendants(pid: u32) -> usize {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, then the parent's pid.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if let (Some(state), Some(Ok(parent))) =
            (fields.first(), fields.get(1).map(|p| p.parse::<u32>()))
        {
            parent_of.push((child, parent, *state == "Z"));
        }
    }
    let mut below = vec![pid];
    let mut alive = 0;
    while let Some(p) = below.pop() {
        for (child, parent, zombie) in &parent_of {
            if *parent == p {
                below.push(*child);
                alive += usize::from(!zombie);
            }
        }
    }
    alive
}

/// `serve` with cgroups in `dir`, after one program has run (its warm runtime started).
fn serve_warmed(dir: &std::path::Path) -> (Serve, String) {
    let db = dir.join("registry.db").display().to_string();
    let (serve, base, _) = serve_contained(&db, dir, &[]);
    let warmed = run(&base, "", "1", json!({}));
    assert_eq!(ran(&warmed)["value"], 1, "{warmed}");
    (serve, base)
}

#[test]
fn a_fork_bomb_is_contained_and_the_gateway_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (serve, base) = serve_warmed(dir.path());
    let before = descendants(serve.0.id());
    // Each child forks on, then sleeps: what is not contained would still be there.
    let bomb = "import os, time\nfor _ in range(10000):\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(600)";
    let answer = run(&base, "", bomb, json!({"timeout_ms": 5000}));
    assert_eq!(answer["result"]["success"], false, "{answer}");
    // Nothing of it is left running, and the next program runs.
    let after = run(&base, "", "6 * 7", json!({}));
    assert_eq!(ran(&after)["value"], 42, "{after}");
    let left = descendants(serve.0.id());
    assert!(
        left <= before + 4,
        "{left} processes below serve after the bomb, {before} before"
    );
}

/// A program is answered when it says it is done, not when its process ends (the exit of a
/// forked interpreter is most of a millisecond; here, what it left to run is half a minute):
/// what is left of it is killed after the answer and its slot and folder are cleaned — the
/// next program finds neither its processes nor its files.
#[test]
fn a_program_is_answered_when_it_ends_and_what_it_leaves_is_cleaned_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_serve, base) = serve_warmed(dir.path());
    // Half a minute of work after its answer: an exit handler and a thread, each sleeping.
    // Its value names its process: pid and start time (which a reused pid would not share).
    let lingering = "import atexit, os, sys, threading, time\n\
        atexit.register(time.sleep, 30)\n\
        threading.Thread(target=time.sleep, args=(30,)).start()\n\
        open('left.txt', 'w').write('x')\n\
        print('said')\n\
        sys.stderr.write('to stderr\\n')\n\
        [os.getpid(), open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]]";
    let started = Instant::now();
    let answer = run(&base, "", lingering, json!({"timeout_ms": 60000}));
    let took = started.elapsed();
    let data = ran(&answer);
    assert_eq!(data["output"], "said\n", "{answer}");
    assert!(
        took < Duration::from_secs(20),
        "answered after {took:?}: it waited for the process (30 s of sleeps) to end"
    );
    let pid = data["value"][0].as_u64().expect("its pid");
    let born = data["value"][1]
        .as_str()
        .expect("its start time")
        .to_owned();
    // The process that ran it is gone (waited for: a loaded machine may take a while).
    let alive = || {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        fields.get(19) == Some(&born.as_str()) && fields.first() != Some(&"Z")
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(), "the program's process {pid} is still running");
    // The next programs run, each in a folder without the file it left.
    for _ in 0..3 {
        let next = run(&base, "", "import os\nsorted(os.listdir('.'))", json!({}));
        assert_eq!(ran(&next)["value"], json!([]), "{next}");
    }
}

#[test]
fn an_mcp_client_in_code_mode_sees_two_tools_and_runs_programs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let catalog = repo().join("examples/catalog.yaml");
    let (_serve, base, mcp) = serve(
        &db,
        dir.path(),
        &["--catalog", catalog.to_str().expect("utf-8")],
    );
    let token = local_token(&base).expect("the local admin token");
    let code_mode = [("x-toolsmith-discovery", "code")];
    let ask_code = |method: &str, params: Value| {
        let (status, answer) = ask_with(&mcp, &token, method, params, json!({}), &code_mode);
        assert_eq!(status, 200, "{answer}");
        answer["result"].clone()
    };
    let listed = ask_code("tools/list", json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["search_tools", "run_code"], "{listed}");

    // search_tools answers with the import line and the typed function.
    let found = ask_code(
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "temperature", "limit": 1}}),
    );
    let text = found["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("from tools import convert_temperature\ndef convert_temperature(*, "),
        "{text}"
    );
    assert!(!text.contains("_call("), "no body: {text}");

    // run_code: the model gets the output and the value; the calls are in the structure.
    let program = "from tools import convert_temperature\nprint('hi')\nconvert_temperature(value=0, from_='celsius', to='kelvin')['value']";
    let ran = ask_code(
        "tools/call",
        json!({"name": "run_code", "arguments": {"code": program}}),
    );
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["content"][0]["text"], "hi\n273.15", "{ran}");
    assert_eq!(
        ran["structuredContent"]["calls"][0]["tool"],
        "convert_temperature"
    );
    // A failing program is an error with its traceback; a dangerous tool does not run.
    let ran = ask_code(
        "tools/call",
        json!({"name": "run_code", "arguments": {"code": "from tools import write_file\nwrite_file(path='x.txt', content='x')"}}),
    );
    assert_eq!(ran["isError"], true, "{ran}");
    let text = ran["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("ToolError") && text.contains("needs_confirmation"),
        "{text}"
    );
    assert!(!dir.path().join("x.txt").exists());
    // A client that can show a form is asked before a dangerous tool runs in the program
    // (2026-07-28: "input required", the program parked until the answer comes back).
    let form = json!({"elicitation": {"form": {}}});
    let write = json!({"name": "run_code", "arguments": {"code": "from tools import write_file\nwrite_file(path='asked.txt', content='yes')\n'written'"}});
    for (answer, written) in [
        (json!({"action": "decline"}), false),
        (
            json!({"action": "accept", "content": {"confirm": true}}),
            true,
        ),
    ] {
        let (_, first) = ask_with(
            &mcp,
            &token,
            "tools/call",
            write.clone(),
            form.clone(),
            &code_mode,
        );
        let asked = &first["result"];
        assert_eq!(asked["resultType"], "input_required", "{first}");
        let question = &asked["inputRequests"]["upstream_question"];
        assert_eq!(question["method"], "elicitation/create", "{first}");
        assert!(
            question["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("`write_file`")),
            "{first}"
        );
        assert!(
            !dir.path().join("asked.txt").exists(),
            "nothing ran before the answer"
        );
        let mut again = write.clone();
        again["inputResponses"] = json!({ "upstream_question": answer });
        again["requestState"] = asked["requestState"].clone();
        let (_, done) = ask_with(&mcp, &token, "tools/call", again, form.clone(), &code_mode);
        let done = &done["result"];
        assert_eq!(done["isError"], !written, "{done}");
        assert_eq!(dir.path().join("asked.txt").exists(), written, "{done}");
        if written {
            assert_eq!(done["content"][0]["text"], "written", "{done}");
        } else {
            assert!(
                done["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("needs_confirmation")),
                "{done}"
            );
        }
    }

    // Code mode is the request's choice: without the header the endpoint lists every tool.
    let listed_all = ask_with(&mcp, &token, "tools/list", json!({}), json!({}), &[]).1;
    assert!(
        listed_all["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() > 2),
        "without the header every tool is listed: {listed_all}"
    );
}

/// `serve --code-*` sets what a program may use: its time (a request may ask for less, not
/// more), its memory and its output; `--help` says so.
#[test]
fn the_servers_code_limits_hold_a_program() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("registry.db").display().to_string();
    let (_serve, base, mcp) = serve(
        &db,
        dir.path(),
        &[
            "--no-catalog",
            "--code-timeout",
            "2",
            "--code-output",
            "50",
            "--code-memory",
            "256",
        ],
    );
    // A model is told the limit this server holds it to.
    let token = local_token(&base).expect("the local admin token");
    let (_, listed) = ask_with(
        &mcp,
        &token,
        "tools/list",
        json!({}),
        json!({}),
        &[("x-toolsmith-discovery", "code")],
    );
    let run_code = listed["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "run_code")
        .cloned()
        .unwrap_or_default();
    assert!(
        run_code["description"]
            .as_str()
            .unwrap_or_default()
            .contains("2 s at most"),
        "{run_code}"
    );
    assert_eq!(
        run_code["inputSchema"]["properties"]["timeout_ms"]["maximum"], 2000,
        "{run_code}"
    );
    let started = Instant::now();
    let answer = run(&base, "", "while True:\n    pass", json!({}));
    assert_eq!(answer["result"]["error"]["kind"], "timeout", "{answer}");
    assert!(started.elapsed() < Duration::from_secs(50));
    let (status, refused) = request(
        "POST",
        &format!("{base}/code/run"),
        Some(json!({"code": "1", "timeout_ms": 5000})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("1 to 2000 ms"),
        "{refused}"
    );
    // The REST document says the same limit.
    let document = get(&base, "/openapi.json");
    assert_eq!(
        document["components"]["schemas"]["RunBody"]["properties"]["timeout_ms"]["maximum"],
        2000
    );
    // 1,000 characters and print's line break: 50 kept, 951 cut.
    let answer = run(&base, "", "print('a' * 1000)", json!({}));
    let data = ran(&answer);
    assert_eq!(data["cut"], true, "{answer}");
    let output = data["output"].as_str().unwrap_or_default();
    assert!(
        output.starts_with(&"a".repeat(50)) && !output.starts_with(&"a".repeat(51)),
        "{output}"
    );
    assert!(output.contains("951 more characters cut"), "{output}");
    // 512 MiB is within the default 1 GiB, not within 256 MiB.
    let answer = run(
        &base,
        "",
        "x = bytearray(512 * 1024 ** 2)\nlen(x)",
        json!({}),
    );
    assert!(error_text(&answer).contains("MemoryError"), "{answer}");

    let help = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["serve", "--help"])
        .output()
        .expect("serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--code-timeout",
        "--code-cpu",
        "--code-memory",
        "--code-processes",
        "--code-output",
    ] {
        assert!(help.contains(flag), "{flag} in serve --help");
    }
}
