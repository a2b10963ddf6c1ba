//! Injection planning (SPEC §5.2): validated arguments → argv, stdin, env.

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use toolsmith_core::plan::{self, MAX_ARG_BYTES};

use super::support::compiled;

/// Runs the pipeline and the planner; prints argv / stdin / env, or the problems.
fn check(tool_yaml: &str, args: Value, expect: Expect) {
    let t = compiled(tool_yaml);
    let result = plan::dry_run(&t, args);
    let out = match (&result.data, &result.error) {
        (Some(d), _) => {
            let mut s = format!("argv {}\n", d["argv"]);
            if !d["stdin"].is_null() {
                s.push_str(&format!("stdin {}\n", d["stdin"]));
            }
            if d["env"].as_object().is_some_and(|e| !e.is_empty()) {
                s.push_str(&format!("env {}\n", d["env"]));
            }
            s
        }
        (_, Some(e)) => e.details.iter().map(|p| format!("{p}\n")).collect(),
        _ => unreachable!(),
    };
    expect.assert_eq(&out);
}

const KITCHEN: &str = r#"
name: k
description: d
command: [prog, --fixed]
parameters:
  - {name: pos, required: false}
  - {name: count, type: integer, required: false, inject_as: option, option_name: --count}
  - {name: ratio, type: number, required: false, inject_as: option, option_name: --ratio, option_style: equals}
  - {name: force, type: boolean, required: false, inject_as: option, option_name: --force}
  - {name: color, type: boolean, required: false, inject_as: option, option_name: --color, boolean_style: value}
  - {name: files, type: array, items: string, required: false, inject_as: option, option_name: --file}
  - {name: tags, type: array, items: string, required: false, inject_as: option, option_name: --tags, array_style: join, separator: ";"}
  - {name: ids, type: array, items: integer, required: false, inject_as: option, option_name: --ids, array_style: separate}
  - {name: meta, type: object, additional_properties: true, required: false, inject_as: option, option_name: --meta}
  - {name: rest, type: array, items: string, required: false}
  - {name: body, required: false, inject_as: stdin}
  - {name: level, type: integer, required: false, inject_as: env}
  - {name: path_list, type: array, items: string, required: false, inject_as: env, env_name: MY_PATHS, separator: ":"}
"#;

#[test]
fn every_type_and_style() {
    check(
        KITCHEN,
        json!({}),
        expect![[r#"
        argv ["prog","--fixed"]
    "#]],
    );
    check(
        KITCHEN,
        json!({"pos": "a b", "count": "2000", "ratio": 2.5, "force": true, "color": false, "files": ["x", "y"],
               "tags": ["p", "q"], "ids": [1, 2.0], "meta": {"k": [1, "v"]}, "rest": ["r1", "r2"],
               "body": "hello\n", "level": 3, "path_list": ["/a", "/b"]}),
        expect![[r#"
            argv ["prog","--fixed","a b","--count","2000","--ratio=2.5","--force","--color","false","--file","x","--file","y","--tags","p;q","--ids","1","2","--meta","{\"k\":[1,\"v\"]}","r1","r2"]
            stdin "hello\n"
            env {"LEVEL":"3","MY_PATHS":"/a:/b"}
        "#]],
    );
    // false flags, empty arrays and nulls inject nothing.
    check(
        KITCHEN,
        json!({"force": false, "files": [], "pos": null}),
        expect![[r#"
        argv ["prog","--fixed"]
    "#]],
    );
}

#[test]
fn numbers_are_plain_decimal_text() {
    let t = "name: n\ndescription: d\ncommand: [p]\nparameters: [{name: x, type: number}, {name: y, type: integer}]";
    check(
        t,
        json!({"x": 2000.0, "y": 2000}),
        expect![[r#"
        argv ["p","2000","2000"]
    "#]],
    );
    check(
        t,
        json!({"x": 0.1, "y": "-5"}),
        expect![[r#"
        /y: "-5" starts with `-` and would be read as an option; this tool does not set `end_of_options`
    "#]],
    );
}

#[test]
fn leading_dashes_are_refused_unless_end_of_options_is_set() {
    let plain = "name: r\ndescription: d\ncommand: [rm]\nparameters: [{name: paths, type: array, items: string}]";
    check(
        plain,
        json!({"paths": ["ok", "-rf", "/"]}),
        expect![[r#"
        /paths: "-rf" starts with `-` and would be read as an option; this tool does not set `end_of_options`
    "#]],
    );
    let guarded = "name: r\ndescription: d\ncommand: [rm]\nend_of_options: \"--\"\nparameters: [{name: force, type: boolean, default: false, inject_as: option, option_name: -f}, {name: paths, type: array, items: string}]";
    check(
        guarded,
        json!({"paths": ["ok", "-rf"], "force": true}),
        expect![[r#"
        argv ["rm","-f","--","ok","-rf"]
    "#]],
    );
    // No positional value: no marker.
    check(
        guarded,
        json!({"paths": []}),
        expect![[r#"
        argv ["rm"]
    "#]],
    );
    let git = "name: g\ndescription: d\ncommand: [git, log]\nend_of_options: \"--end-of-options\"\nparameters: [{name: rev}]";
    check(
        git,
        json!({"rev": "--output=/etc/passwd"}),
        expect![[r#"
        argv ["git","log","--end-of-options","--output=/etc/passwd"]
    "#]],
    );
    let separate = "name: s\ndescription: d\ncommand: [p]\nparameters: [{name: v, type: array, items: string, inject_as: option, option_name: --vals, array_style: separate}]";
    check(
        separate,
        json!({"v": ["a", "-x"]}),
        expect![[r#"
        /v: "-x" starts with `-` and would be read as an option after --vals
    "#]],
    );
}

#[test]
fn nul_bytes_and_oversized_arguments_are_refused() {
    let t = "name: t\ndescription: d\ncommand: [p]\nparameters: [{name: a, required: false}, {name: e, required: false, inject_as: env}, {name: s, required: false, inject_as: stdin}]";
    check(
        t,
        json!({"a": "x\u{0}y"}),
        expect![[r#"
        /a: the value contains a NUL byte, which no program can receive
    "#]],
    );
    check(
        t,
        json!({"e": "x\u{0}"}),
        expect![[r#"
        /e: environment variable E contains a NUL byte, which no program can receive
    "#]],
    );
    // The kernel's limit counts the terminating NUL (and `NAME=` for a variable).
    let big = "x".repeat(MAX_ARG_BYTES);
    check(
        t,
        json!({"a": big}),
        expect![[r#"
        /a: the value is 131072 bytes, over the 131071-byte limit the kernel sets for one argument or variable; pass large values on stdin (`inject_as: stdin`)
    "#]],
    );
    let t3 = compiled(t);
    let fits = "x".repeat(MAX_ARG_BYTES - 1);
    assert!(plan::dry_run(&t3, json!({"a": fits})).success);
    let env_fits = "x".repeat(MAX_ARG_BYTES - 1 - "E=".len());
    assert!(plan::dry_run(&t3, json!({"e": env_fits.clone()})).success);
    assert!(!plan::dry_run(&t3, json!({"e": format!("{env_fits}x")})).success);
    // stdin takes any size and any bytes JSON can carry.
    let t2 = compiled(t);
    let r = plan::dry_run(&t2, json!({"s": format!("{big}\u{0}")}));
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        r.data.expect("data")["stdin"].as_str().map(str::len),
        Some(MAX_ARG_BYTES + 1)
    );
}

#[test]
fn config_reaches_commands_as_environment_and_secrets_are_redacted() {
    check(
        r#"
name: c
description: d
command: [curl]
config_schema:
  - {name: base_url, default: "https://api.example"}
  - {name: token, secret: true, env_name: API_TOKEN}
  - {name: retries, type: integer, default: 3}
config: {token: hunter2}
parameters: [{name: q}]
"#,
        json!({"q": "x"}),
        expect![[r#"
            argv ["curl","x"]
            env {"BASE_URL":"https://api.example","API_TOKEN":"***","RETRIES":"3"}
        "#]],
    );
}

#[test]
fn scripts_get_arguments_and_config_as_json_on_stdin() {
    check(
        "name: s\ndescription: d\nscript: {interpreter: node, source: x}\nconfig_schema: [{name: k, default: v}]\nparameters: [{name: n, type: integer}]",
        json!({"n": "4"}),
        expect![[r#"
            argv ["node","tool_script"]
            stdin "{\"n\":4,\"config\":{\"k\":\"v\"}}"
        "#]],
    );
}
