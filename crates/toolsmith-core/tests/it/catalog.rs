//! Catalog loading: every rule of SPEC §2.1, every error with its path, imports, config,
//! the Delta form and round trips.

use expect_test::{Expect, expect};
use serde_json::json;
use toolsmith_core::catalog;
use toolsmith_core::command::{CommandPlace, InjectAs};
use toolsmith_core::http::{HttpPlace, RequestPart};
use toolsmith_core::model::{Executor, ParamType, Secrets, Tool};

/// Where a command tool's parameter goes.
fn command_place<'a>(tool: &'a Tool, param: &str) -> &'a CommandPlace {
    match &tool.executor {
        Executor::Command(c) => c.place(param),
        other => panic!("{} is a {} tool", tool.name, other.kind()),
    }
}

/// Where an http tool's parameter goes.
fn http_place(tool: &Tool, param: &str) -> HttpPlace {
    match &tool.executor {
        Executor::Http(h) => h.place(param),
        other => panic!("{} is a {} tool", tool.name, other.kind()),
    }
}

use super::support::{MemSource, errors, example_catalogs, load, tool};

fn check(yaml: &str, expect: Expect) {
    expect.assert_eq(&errors(yaml));
}

#[test]
fn the_issue_example_error_is_reported_as_written() {
    check(
        r#"
tools:
  - name: t
    description: d
    command: [ls]
    parameters:
      - {name: a}
      - {name: b, type: numbr}
"#,
        expect![[r#"
            tools[0].parameters[1].type: unknown type "numbr" (expected one of string, integer, number, boolean, enum, array, object)
        "#]],
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    check(
        r#"
tools:
  - name: "bad name"
    description: ""
    command: [ls]
    builtin: read_file
  - name: dup
    description: first
    command: [ls]
    parameters:
      - {name: x, inject_as: option}
      - {name: x, type: integer, minimum: 5, maximum: 1}
      - {name: s1, inject_as: stdin}
      - {name: s2, inject_as: stdin}
      - {name: re, pattern: "(unclosed"}
      - {name: n, type: integer, default: "seven"}
      - {name: m, type: integer, minimum: 1, default: 0}
      - {name: l, min_length: 9, max_length: 2}
      - {name: i, type: array, items: string, min_items: 3, max_items: 1}
  - name: dup
    description: second
    command: [ls]
"#,
        expect![[r#"
            tools[0].name: invalid tool name "bad name": use a letter, then up to 63 letters, digits or underscores (set `defaults.tool_names: mcp` to allow `.` and `-`)
            tools[0]: more than one executor (command, builtin): give exactly one
            tools[0].description: missing or empty; describe what the tool does, for the model
            tools[1].parameters[0].option_name: `inject_as: option` needs `option_name`, for example `--limit`
            tools[1].parameters[1].minimum: minimum 5 is above maximum 1
            tools[1].parameters[1].name: duplicate parameter name "x"
            tools[1].parameters[4].pattern: invalid regular expression "(unclosed": "(unclosed" is not a "regex"
            tools[1].parameters[5].default: default "seven" fails its own schema: "seven" is not of type "integer"
            tools[1].parameters[6].default: default 0 fails its own schema: 0 is less than the minimum of 1
            tools[1].parameters[7].min_length: min_length 9 is above max_length 2
            tools[1].parameters[8].min_items: min_items 3 is above max_items 1
            tools[1].parameters[3].inject_as: a tool has one stdin; "s1" already uses it
            tools[2].name: duplicate tool name "dup" (first declared at catalog.yaml: tools[1])
        "#]],
    );
}

#[test]
fn unknown_keys_are_errors_with_a_suggestion() {
    check(
        r#"
defaults: {timout_ms: 5}
tools:
  - name: t
    descripton: typo
    description: d
    command: [ls]
    parameters:
      - {name: a, typ: string, injectas: argument}
      - {name: b, type: object, properties: [{name: c, mininum: 3, type: integer}]}
    annotations: {read_only: true, readonly: false}
    formats: {openai: {append: x}, claude: {description: y}}
"#,
        expect![[r#"
            defaults.timout_ms: unknown key; did you mean `timeout_ms`?
            tools[0].descripton: unknown key; did you mean `description`?
            tools[0].annotations.readonly: unknown key; did you mean `read_only`?
            tools[0].parameters[0].typ: unknown key; did you mean `type`?
            tools[0].parameters[0].injectas: unknown key; did you mean `inject_as`?
            tools[0].parameters[1].properties[0].mininum: unknown key; did you mean `minimum`?
            tools[0].formats.claude: unknown key; expected one of openai, openai-responses, anthropic, gemini, mcp, xml
        "#]],
    );
}

#[test]
fn executors_are_checked() {
    check(
        r#"
tools:
  - {name: none, description: d}
  - {name: empty, description: d, command: []}
  - {name: notalist, description: d, command: "ls -l"}
  - {name: both, description: d, script: {source: "x", path: "y.py"}}
  - {name: neither, description: d, script: {interpreter: node}}
  - {name: builtin_params, builtin: read_file, parameters: [{name: x}]}
  - {name: unsafe_builtin, builtin: write_file, danger: safe}
  - {name: eoo_script, description: d, script: {source: "x"}, end_of_options: "--"}
  - {name: reserved, description: d, script: {source: "x"}, parameters: [{name: config}]}
  - {name: rich, description: d, executor: {kind: shell, command: [ls]}}
"#,
        expect![[r#"
            tools[0]: no executor: give exactly one of `command`, `script`, `builtin` or `http`
            tools[1].command: `command` is empty: name the program to run
            tools[2].command: `command` is a list: the program, then fixed arguments, e.g. [git, status]
            tools[3].script: give either `source` or `path`, not both
            tools[4].script: a script needs `source` (the code) or `path` (a file beside the catalog)
            tools[5].parameters: the built-in `read_file` defines its own parameters; remove `parameters`
            tools[6].danger: the built-in `write_file` is dangerous and cannot be declared safe
            tools[7].end_of_options: `end_of_options` applies to command tools
            tools[8].parameters[0].name: script tools reserve `config` for their config values; rename the parameter
            tools[9].executor.kind: unknown executor kind "shell" (expected one of command, script, builtin, mcp, http)
        "#]],
    );
}

#[test]
fn injection_rules_are_checked() {
    check(
        r#"
tools:
  - name: t
    description: d
    command: [ls]
    end_of_options: "--"
    parameters:
      - {name: a, inject_as: option, option_name: "-- bad"}
      - {name: b, option_name: --b}
      - {name: c, type: boolean, boolean_style: flag}
      - {name: d, type: array, items: string, array_style: repeat}
      - {name: e, type: array, items: string, inject_as: option, option_name: --e, option_style: equals, array_style: separate}
      - {name: f, type: integer, array_style: join}
      - {name: g, separator: ","}
      - {name: h, inject_as: env, env_name: "1BAD"}
      - {name: i, inject_as: env, env_name: H2}
      - {name: j, inject_as: env, env_name: H2}
      - {name: k, type: object, properties: [{name: deep, inject_as: option, option_name: --deep}]}
      - {name: z, inject_as: option, option_name: --late}
  - name: s
    description: d
    script: {source: "x"}
    parameters:
      - {name: a, inject_as: option, option_name: --a}
      - {name: b, secret: true}
"#,
        expect![[r#"
            tools[0].parameters[0].option_name: invalid option name "-- bad": it starts with `-` and has no spaces or `=`
            tools[0].parameters[1].option_name: `option_name` applies with `inject_as: option`
            tools[0].parameters[2].boolean_style: `boolean_style: flag` needs `inject_as: option` (a flag is an option)
            tools[0].parameters[3].array_style: `array_style: repeat` needs `inject_as: option` (it repeats the option name)
            tools[0].parameters[4].array_style: `array_style: separate` cannot be combined with `option_style: equals`
            tools[0].parameters[5].array_style: `array_style` applies to array parameters, not integer
            tools[0].parameters[6].separator: `separator` applies to arrays injected with `array_style: join`
            tools[0].parameters[7].env_name: invalid environment variable name "1BAD": use letters, digits and `_`, not starting with a digit
            tools[0].parameters[10].properties[0].inject_as: `inject_as` applies to top-level parameters of command tools; only top-level parameters are injected
            tools[0].parameters[10].properties[0].option_name: `option_name` applies to top-level parameters of command tools; only top-level parameters are injected
            tools[0].parameters[9].env_name: environment variable "H2" is set by two parameters
            tools[0].parameters[4].inject_as: with `end_of_options`, options come before arguments: move "e" above "b"
            tools[0].parameters[11].inject_as: with `end_of_options`, options come before arguments: move "z" above "b"
            tools[1].parameters[0].inject_as: `inject_as` applies to top-level parameters of command tools; script and built-in tools receive their arguments as JSON
            tools[1].parameters[0].option_name: `option_name` applies to top-level parameters of command tools; script and built-in tools receive their arguments as JSON
            tools[1].parameters[1].secret: `secret` applies to config_schema fields only
        "#]],
    );
}

/// Finding 5 of the second hardening round: a parameter may not set a variable the server
/// passes through (`env_allowlist`), nor one that changes how programs load or start unless
/// the catalog allows it for that parameter.
#[test]
fn parameters_cannot_target_allowlisted_or_loader_variables() {
    check(
        r#"
defaults: {env_allowlist: [PATH, HOME, TZ]}
tools:
  - name: t
    description: d
    command: [ls]
    env_allowlist: [LANG]
    parameters:
      - {name: a, inject_as: env, env_name: PATH}
      - {name: tz, inject_as: env}
      - {name: lang, inject_as: env}
      - {name: b, inject_as: env, env_name: LD_PRELOAD}
      - {name: c, inject_as: env, env_name: LD_LIBRARY_PATH}
      - {name: bash_env, inject_as: env}
      - {name: e, inject_as: env, env_name: ENV}
      - {name: f, inject_as: env, env_name: PYTHONPATH}
      - {name: g, inject_as: env, env_name: NODE_OPTIONS}
      - {name: h, inject_as: env, env_name: PERL5OPT}
      - {name: i, inject_as: env, env_name: GIT_SSH_COMMAND}
      - {name: j, inject_as: env, env_name: GIT_CONFIG_KEY_0}
      - {name: k, inject_as: env, env_name: PYTHONSTARTUP, allow_dangerous_env: true}
      - {name: author, inject_as: env, env_name: GIT_AUTHOR_NAME}
      - {name: m, allow_dangerous_env: true}
"#,
        expect![[r#"
            tools[0].parameters[14].allow_dangerous_env: `allow_dangerous_env` applies with `inject_as: env`
            tools[0].parameters[0].env_name: environment variable "PATH" is already set by the server's environment (`env_allowlist`); a model's argument would replace it. Give the parameter another env_name
            tools[0].parameters[1].env_name: environment variable "TZ" is already set by the server's environment (`env_allowlist`); a model's argument would replace it. Give the parameter another env_name
            tools[0].parameters[2].env_name: environment variable "LANG" is already set by the server's environment (`env_allowlist`); a model's argument would replace it. Give the parameter another env_name
            tools[0].parameters[3].env_name: a model's argument may not set environment variable "LD_PRELOAD": it makes the dynamic loader run other code. Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[4].env_name: a model's argument may not set environment variable "LD_LIBRARY_PATH": it makes the dynamic loader run other code. Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[5].env_name: a model's argument may not set environment variable "BASH_ENV": it runs a file in every bash script. Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[6].env_name: a model's argument may not set environment variable "ENV": it runs a file in every sh script. Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[7].env_name: a model's argument may not set environment variable "PYTHONPATH": it changes how Python starts (PYTHONPATH, PYTHONSTARTUP, …). Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[8].env_name: a model's argument may not set environment variable "NODE_OPTIONS": it changes how Node starts (--require). Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[9].env_name: a model's argument may not set environment variable "PERL5OPT": it changes how Perl starts. Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[10].env_name: a model's argument may not set environment variable "GIT_SSH_COMMAND": it changes which programs and configuration git uses (GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR, …). Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
            tools[0].parameters[11].env_name: a model's argument may not set environment variable "GIT_CONFIG_KEY_0": it changes which programs and configuration git uses (GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR, …). Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it
        "#]],
    );
}

#[test]
fn options_after_arguments_are_refused_with_end_of_options() {
    check(
        r#"
tools:
  - name: t
    description: d
    command: [ls]
    end_of_options: "--"
    parameters:
      - {name: path}
      - {name: all, type: boolean, default: false, inject_as: option, option_name: --all}
      - {name: e1, inject_as: env, env_name: SAME, required: false}
      - {name: e2, inject_as: env, env_name: SAME, required: false}
"#,
        expect![[r#"
            tools[0].parameters[3].env_name: environment variable "SAME" is set by two parameters
            tools[0].parameters[1].inject_as: with `end_of_options`, options come before arguments: move "all" above "path"
        "#]],
    );
}

#[test]
fn type_specific_keys_are_checked() {
    check(
        r#"
tools:
  - name: t
    description: d
    command: [ls]
    parameters:
      - {name: a, type: enum}
      - {name: b, type: enum, values: []}
      - {name: c, type: enum, values: [x, 1]}
      - {name: d, type: enum, values: [x, x]}
      - {name: e, values: [x]}
      - {name: f, type: array}
      - {name: g, items: string}
      - {name: h, type: integer, min_length: 1, minimum: 1.5}
      - {name: i, type: string, minimum: 1}
      - {name: j, type: array, items: {name: named, type: string}}
      - {name: k, type: number, multiple_of: 0}
      - {name: l, format: emial}
      - {name: m, type: integer, exclusive_minimum: 5, exclusive_maximum: 5}
      - {name: "bad name"}
      - {name: n, type: string, required: true, default: x}
      - {description: no name}
"#,
        expect![[r#"
            tools[0].parameters[0].values: an enum needs `values`: a list of strings or of integers
            tools[0].parameters[1].values: an enum needs at least one value
            tools[0].parameters[2].values: enum values must be all strings or all integers
            tools[0].parameters[3].values: duplicate enum value "x"
            tools[0].parameters[4].values: `values` applies to enum parameters, not string
            tools[0].parameters[5].items: an array needs `items`, for example `items: {type: string}`
            tools[0].parameters[6].items: `items` applies to array parameters, not string
            tools[0].parameters[7].min_length: `min_length` applies to string parameters, not integer
            tools[0].parameters[7].minimum: 1.5 is not an integer, but the parameter is
            tools[0].parameters[8].minimum: `minimum` applies to integer and number parameters, not string
            tools[0].parameters[9].items.name: array items have no name; remove `name`
            tools[0].parameters[10].multiple_of: multiple_of must be greater than 0
            tools[0].parameters[11].format: unknown format "emial" (expected one of date-time, date, time, duration, email, idn-email, hostname, idn-hostname, ipv4, ipv6, uri, uri-reference, iri, iri-reference, uri-template, uuid, json-pointer, relative-json-pointer, regex)
            tools[0].parameters[12].exclusive_minimum: exclusive_minimum 5 leaves no value allowed with exclusive_maximum 5
            tools[0].parameters[13].name: invalid parameter name "bad name": use a letter or `_`, then up to 63 letters, digits, `_` or `-`
            tools[0].parameters[14].required: a required parameter's default is never used; remove one of them
            tools[0].parameters[15].name: missing; every parameter needs a name
        "#]],
    );
}

#[test]
fn wrong_value_types_are_named() {
    check(
        r#"
tools:
  - name: t
    description: [not, text]
    command: [ls]
    timeout_ms: -5
    enabled: "yes"
    tags: [ok, 5, "two words"]
    parameters: {name: a}
  - "just a string"
"#,
        expect![[r#"
            tools[0].description: expected a string, got an array
            tools[0].description: missing or empty; describe what the tool does, for the model
            tools[0].timeout_ms: expected a non-negative integer, got -5
            tools[0].tags[1]: expected a string, got a number
            tools[0].tags[1]: invalid tag "two words": tags are single words
            tools[0].parameters: expected a list, got an object
            tools[1]: expected a mapping, got a string
        "#]],
    );
}

#[test]
fn file_level_problems() {
    check(
        "",
        expect![[r#"
        : the file is empty; a catalog starts with `tools:`
    "#]],
    );
    check(
        "tools: [",
        expect![[r#"
        : invalid YAML: did not find expected node content at line 2 column 1, while parsing a flow node
    "#]],
    );
    check(
        "- a\n- b\n",
        expect![[r#"
        : expected a mapping, got an array
    "#]],
    );
    check(
        "defaults: {}\n",
        expect![[r#"
            : a catalog needs `tools:` (a list of tools), `mcp_servers:`, `openapi:`, `toolsets:` or `imports:`
        "#]],
    );
    check(
        "tools: []\ntools: []\n",
        expect![[r#"
        : invalid YAML: duplicate entry with key "tools"
    "#]],
    );
    check(
        "tools: [{name: t, description: d, command: [ls], timeout_ms: 5, timeout_ms: 6}]",
        expect![[r#"
        : invalid YAML: tools[0]: duplicate entry with key "timeout_ms" at line 1 column 9
    "#]],
    );
    check(
        "tools: [{name: t, description: d, command: [ls], parameters: [{name: n, type: number, default: .inf}]}]",
        expect![[r#"
        : tools[0].parameters[0].default: infinite or NaN numbers are not allowed
    "#]],
    );
    check(
        "tools: [{name: t, description: d, command: [ls]}]\n? [complex]\n: key\n",
        expect![[r#"
        : invalid YAML: key must be a string (mapping keys must be text)
    "#]],
    );
}

#[test]
fn imports_resolve_inside_the_folder_and_refuse_cycles() {
    let src = MemSource::new(&[
        (
            "catalog.yaml",
            "imports: [sub/a.yaml, ../escape.yaml, /etc/x.yaml]\ntools: [{name: root, description: d, command: [ls]}]",
        ),
        (
            "sub/a.yaml",
            "imports: [b.yaml]\ntools: [{name: in_a, description: d, command: [ls]}]",
        ),
        (
            "sub/b.yaml",
            "imports: [a.yaml]\ntools: [{name: in_b, description: d, command: [ls]}]",
        ),
    ]);
    let err = catalog::load("catalog.yaml", &src).expect_err("must fail");
    let text: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    expect![[r#"
        [
            "catalog.yaml: imports[1]: \"../escape.yaml\" leaves the catalog's folder (`..` is not allowed)",
            "catalog.yaml: imports[2]: \"/etc/x.yaml\" is absolute; paths are relative to the catalog's folder",
            "sub/b.yaml: imports: import cycle: catalog.yaml → sub/a.yaml → sub/b.yaml → sub/a.yaml",
        ]
    "#]]
    .assert_debug_eq(&text);

    // Without the bad imports, tools come in file order and a diamond import loads once.
    let src = MemSource::new(&[
        (
            "catalog.yaml",
            "imports: [a.yaml, b.yaml]\ntools: [{name: root, description: d, command: [ls]}]",
        ),
        (
            "a.yaml",
            "imports: [shared.yaml]\ntools: [{name: in_a, description: d, command: [ls]}]",
        ),
        (
            "b.yaml",
            "imports: [shared.yaml]\ntools: [{name: in_b, description: d, command: [ls]}]",
        ),
        (
            "shared.yaml",
            "tools: [{name: shared, description: d, command: [ls]}]",
        ),
    ]);
    let catalog = catalog::load("catalog.yaml", &src).expect("loads");
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["root", "in_a", "shared", "in_b"]);
    assert_eq!(
        catalog.files,
        ["catalog.yaml", "a.yaml", "shared.yaml", "b.yaml"]
    );
}

#[test]
fn defaults_apply_per_file_and_are_inherited_by_imports() {
    let src = MemSource::new(&[
        (
            "catalog.yaml",
            "defaults: {timeout_ms: 5000, env_allowlist: [PATH]}\nimports: [a.yaml, b.yaml]\ntools: [{name: root, description: d, command: [ls], env_allowlist: [HOME]}]",
        ),
        (
            "a.yaml",
            "tools: [{name: in_a, description: d, command: [ls]}]",
        ),
        (
            "b.yaml",
            "defaults: {timeout_ms: 100}\ntools: [{name: in_b, description: d, command: [ls], timeout_ms: 7}]",
        ),
    ]);
    let c = catalog::load("catalog.yaml", &src).expect("loads");
    let t = |n: &str| c.get(n).expect("tool");
    assert_eq!(
        (t("root").timeout_ms, t("root").env_allowlist.clone()),
        (5000, vec!["PATH".to_string(), "HOME".into()])
    );
    assert_eq!(
        (t("in_a").timeout_ms, t("in_a").env_allowlist.clone()),
        (5000, vec!["PATH".to_string()])
    );
    assert_eq!(
        (t("in_b").timeout_ms, t("in_b").env_allowlist.clone()),
        (7, vec!["PATH".to_string()])
    );
}

#[test]
fn script_paths_are_read_relative_to_the_catalog() {
    let src = MemSource::new(&[
        (
            "tools/catalog.yaml",
            "tools: [{name: s, description: d, script: {path: scripts/s.py}}, {name: t, description: d, script: {path: ../x.py}}]",
        ),
        ("tools/scripts/s.py", "print('{}')"),
    ]);
    let err = catalog::load("tools/catalog.yaml", &src).expect_err("second script escapes");
    assert_eq!(err.0.len(), 1, "{err}");
    assert_eq!(err.0[0].path, "tools[1].script.path");
    let src = MemSource::new(&[
        (
            "tools/catalog.yaml",
            "tools: [{name: s, description: d, script: {path: scripts/s.py}}]",
        ),
        ("tools/scripts/s.py", "print('{}')"),
    ]);
    let c = catalog::load("tools/catalog.yaml", &src).expect("loads");
    match &c.tools[0].executor {
        Executor::Script(s) => assert_eq!(
            (s.interpreter.as_str(), s.source.as_str()),
            ("python3", "print('{}')")
        ),
        other => panic!("expected a script, got {other:?}"),
    }
}

#[test]
fn config_values_come_from_the_environment_and_are_validated() {
    let yaml = r#"
tools:
  - name: t
    description: d
    command: [curl]
    config_schema:
      - {name: port, type: integer, minimum: 1}
      - {name: api_key, secret: true, env_name: API_KEY}
      - {name: region, default: eu}
    config:
      port: "${PORT}"
      api_key: "${KEY}"
"#;
    let src = |port: &str| {
        MemSource::new(&[("catalog.yaml", yaml)])
            .with_env("PORT", port)
            .with_env("KEY", "s3cret")
    };
    let c = catalog::load("catalog.yaml", &src("8080")).expect("loads");
    let t = &c.tools[0];
    assert_eq!(
        serde_json::Value::Object(t.config.clone()),
        json!({"port": 8080, "api_key": "s3cret", "region": "eu"})
    );
    let shown = t.to_catalog_value(Secrets::Redact);
    assert_eq!(
        shown["config"],
        json!({"port": 8080, "api_key": "***", "region": "eu"})
    );
    assert!(!shown.to_string().contains("s3cret"));
    assert_eq!(
        t.to_catalog_value(Secrets::Keep)["config"]["api_key"],
        "s3cret"
    );

    let err = catalog::load("catalog.yaml", &src("0")).expect_err("port 0 is below the minimum");
    assert_eq!(err.0[0].path, "tools[0].config.port");
    assert!(
        err.0[0].message.contains("less than the minimum of 1"),
        "{}",
        err.0[0].message
    );

    let err = catalog::load("catalog.yaml", &MemSource::new(&[("catalog.yaml", yaml)]))
        .expect_err("no env");
    let text: Vec<String> = err
        .0
        .iter()
        .map(|e| format!("{}: {}", e.path, e.message))
        .collect();
    assert_eq!(
        text,
        [
            "tools[0].config.port: environment variable \"PORT\" is not set",
            "tools[0].config.api_key: environment variable \"KEY\" is not set",
        ]
    );

    check(
        "tools: [{name: t, description: d, command: [ls], config: {unknown: 1}}]",
        expect![[r#"
            tools[0].config.unknown: unknown config field "unknown" (this takes none)
        "#]],
    );
}

#[test]
fn builtins_take_their_interface_from_toolsmith() {
    let t = tool("{name: notes, builtin: read_file, description: Read a note.}");
    assert_eq!(t.description, "Read a note.");
    let names: Vec<&str> = t.parameters.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["path", "offset", "limit"]);
    assert_eq!(
        t.config.get("max_bytes"),
        Some(&json!(1048576)),
        "config defaults are filled"
    );
    let w = tool("{name: w, builtin: write_file}");
    assert!(w.is_dangerous());
    assert!(w.description.starts_with("Write text"));
}

#[test]
fn the_rich_executor_form_is_the_same_tool() {
    let short = tool("{name: t, description: d, command: [git, status]}");
    let rich = tool("{name: t, description: d, executor: {kind: command, command: [git, status]}}");
    assert_eq!(short, rich);
    let short = tool("{name: t, description: d, builtin: glob}");
    let rich = tool("{name: t, description: d, executor: {kind: builtin, name: glob}}");
    assert_eq!(short, rich);
}

#[test]
fn the_delta_form_loads_unchanged() {
    let c = example_catalogs()
        .into_iter()
        .find(|(n, _)| n == "delta.yaml")
        .expect("examples/delta.yaml")
        .1;
    let read = c.get("shell_read").expect("shell_read");
    let Executor::Command(command) = &read.executor else {
        panic!("shell_read is a {} tool", read.executor.kind());
    };
    assert_eq!(command.argv, ["delta-sessions", "read"]);
    let p = &read.parameters[1];
    let place = command_place(read, &p.name);
    assert_eq!(
        (p.ty, place.inject_as, place.option_name.as_deref()),
        (ParamType::String, InjectAs::Option, Some("--timeout"))
    );
    assert!(p.required, "Delta parameters are required");
    let write = c.get("shell_write").expect("shell_write");
    assert_eq!(
        command_place(write, &write.parameters[1].name).inject_as,
        InjectAs::Stdin
    );
}

#[test]
fn mcp_style_names_are_opt_in_and_checked_for_collisions() {
    check(
        "tools: [{name: git.status, description: d, command: [ls]}]",
        expect![[r#"
            tools[0].name: invalid tool name "git.status": use a letter, then up to 63 letters, digits or underscores (set `defaults.tool_names: mcp` to allow `.` and `-`)
        "#]],
    );
    let c = load(
        "defaults: {tool_names: mcp}\ntools: [{name: git.status, description: d, command: [ls]}]",
    );
    assert_eq!(c.tools[0].name.as_str(), "git.status");
    check(
        "defaults: {tool_names: mcp}\ntools: [{name: git.status, description: d, command: [ls]}, {name: git-status, description: d, command: [ls]}]",
        expect![[r#"
            tools[1].name: tool names "git.status" and "git-status" both become "git_status" for providers that do not allow `.` or `-`; rename one
        "#]],
    );
}

#[test]
fn every_example_catalog_round_trips_through_its_catalog_form() {
    for (name, catalog) in example_catalogs() {
        for t in &catalog.tools {
            let value = t.to_catalog_value(Secrets::Keep);
            let again = catalog::parse_tool(&value, &MemSource::default())
                .unwrap_or_else(|e| panic!("{name}: {} does not reload:\n{e}\n{value:#}", t.name));
            assert_eq!(&again, t, "{name}: {}", t.name);
        }
    }
}

#[test]
fn json_catalogs_load_like_yaml() {
    let yaml = load(
        "tools: [{name: t, description: d, command: [echo], parameters: [{name: n, type: integer, default: 3}]}]",
    );
    let json_text = r#"{"tools": [{"name": "t", "description": "d", "command": ["echo"], "parameters": [{"name": "n", "type": "integer", "default": 3}]}]}"#;
    let json = catalog::load("c.json", &MemSource::new(&[("c.json", json_text)])).expect("loads");
    assert_eq!(yaml.tools, json.tools);
    let err = catalog::load("c.json", &MemSource::new(&[("c.json", "{\"tools\": [}")]))
        .expect_err("bad JSON");
    assert!(
        err.0[0]
            .message
            .starts_with("invalid JSON: expected value at line 1 column 12"),
        "{}",
        err.0[0].message
    );
    let dup = r#"{"tools": [], "tools": [{"name": "t", "description": "d", "command": ["ls"]}]}"#;
    let err =
        catalog::load("c.json", &MemSource::new(&[("c.json", dup)])).expect_err("duplicate key");
    assert!(
        err.0[0]
            .message
            .contains("duplicate entry with key \"tools\""),
        "{}",
        err.0[0].message
    );
}

#[test]
fn mcp_servers_report_every_problem_with_its_path() {
    check(
        r#"
mcp_servers:
  - name: a
    comand: [x]
  - name: "bad name"
    url: ftp://x
    on_change: maybe
  - name: c
    command: [x]
    url: http://x/mcp
    tools:
      t: {danger: risky, nme: y}
  - name: h
    url: http://x/mcp
    headers: {Authorization: "Bearer {missing}"}
  - name: a
    url: http://y/mcp
"#,
        expect![[r#"
            mcp_servers[0].comand: unknown key; did you mean `command`?
            mcp_servers[0]: no transport: give `command` (a program speaking MCP on stdio) or `url` (Streamable HTTP)
            mcp_servers[1].name: invalid server name "bad name": 1 to 64 letters, digits, `_` or `-`
            mcp_servers[1].url: "ftp://x" is not an http:// or https:// URL (Streamable HTTP; legacy SSE-only servers are not supported)
            mcp_servers[1].on_change: unknown change policy "maybe" (expected one of hold, accept)
            mcp_servers[2]: give either `command` (a program speaking MCP on stdio) or `url` (Streamable HTTP), not both
            mcp_servers[2].tools.t.nme: unknown key; did you mean `name`?
            mcp_servers[2].tools.t.danger: unknown danger level "risky" (expected one of safe, dangerous)
            mcp_servers[3].headers.Authorization: {missing} names no config field (known: none)
            mcp_servers[4].name: duplicate server name "a" (first declared at catalog.yaml: mcp_servers[0])
        "#]],
    );
}

#[test]
fn an_mcp_server_round_trips_through_its_catalog_form() {
    let source = MemSource::new(&[(
        "c.yaml",
        r#"
mcp_servers:
  - name: files
    command: [npx, -y, server, /data]
    env: {LOG: warn}
    env_allowlist: [PATH]
    working_dir: data
    prefix: fs
    include: ["read_*", list]
    exclude: [read_secret]
    on_change: accept
    timeout_ms: 5000
    idle_timeout_ms: 60000
    tools:
      read_file: {name: read_data, description: Read a data file., danger: safe, tags: [data], timeout_ms: 100}
      list: {enabled: false}
    config_schema: [{name: token, secret: true, env_name: API_TOKEN}]
    config: {token: s3cret}
  - name: web
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer {token}"}
    config_schema: [{name: token, secret: true}]
    config: {token: t0k}
"#,
    )]);
    let catalog = catalog::load("c.yaml", &source).expect("loads");
    assert_eq!(catalog.servers.len(), 2);
    for server in &catalog.servers {
        let form = server.to_catalog_value(Secrets::Keep);
        let again = catalog::parse_server(&form, &source).expect("reads back");
        assert_eq!(&again, server, "{form}");
        let shown = server.to_catalog_value(Secrets::Redact).to_string();
        assert!(
            !shown.contains("s3cret") && !shown.contains("t0k"),
            "{shown}"
        );
    }
    assert_eq!(catalog.servers[0].prefix(), "fs");
    assert!(catalog.servers[0].serves("read_file") && !catalog.servers[0].serves("read_secret"));
    assert_eq!(
        catalog.servers[1].resolved_headers()["Authorization"],
        "Bearer t0k"
    );
}

#[test]
fn dollar_variables_in_a_server_become_secret_config_fields() {
    let yaml = r#"
mcp_servers:
  - name: web
    url: "https://mcp.example.com/${TEAM}/mcp"
    headers: {Authorization: "Bearer ${GH_TOKEN}", X-Other: "${env:OTHER}", X-Plain: "cost: $5 ${"}
  - name: files
    command: [npx, server]
    env: {GITHUB_TOKEN: "${GH_TOKEN}", MIXED: "a-${GH_TOKEN}-b", LOG: warn}
"#;
    let source = MemSource::new(&[("c.yaml", yaml)])
        .with_env("TEAM", "core")
        .with_env("GH_TOKEN", "ghp_s3cret")
        .with_env("OTHER", "o");
    let catalog = catalog::load("c.yaml", &source).expect("loads");
    let web = &catalog.servers[0];
    let headers = web.resolved_headers();
    assert_eq!(headers["Authorization"], "Bearer ghp_s3cret");
    assert_eq!(headers["X-Other"], "o");
    assert_eq!(headers["X-Plain"], "cost: $5 ${");
    assert_eq!(
        web.resolved_url().as_deref(),
        Some("https://mcp.example.com/core/mcp")
    );
    // Kept as secret config fields: the definition as shown holds none of the values.
    let shown = web.to_catalog_value(Secrets::Redact);
    let text = shown.to_string();
    assert!(
        !text.contains("ghp_s3cret") && !text.contains("core/"),
        "{text}"
    );
    assert_eq!(shown["headers"]["Authorization"], "Bearer {gh_token}");
    let fields: Vec<(&str, bool)> = web
        .config_schema
        .iter()
        .map(|p| (p.name.as_str(), p.secret))
        .collect();
    assert_eq!(
        fields,
        [("gh_token", true), ("other", true), ("team", true)]
    );
    // A stdio server: a variable alone becomes the variable the server gets (its env_name),
    // one inside other text a placeholder filled when it starts.
    let files = &catalog.servers[1];
    let env = files.resolved_env();
    assert_eq!(env.get("GITHUB_TOKEN"), None, "moved to a config field");
    assert_eq!(env["MIXED"], "a-ghp_s3cret-b");
    assert_eq!(env["LOG"], "warn");
    let token = files
        .config_schema
        .iter()
        .find(|p| p.name == "github_token")
        .expect("a field for GITHUB_TOKEN");
    assert_eq!(token.env_name.as_deref(), Some("GITHUB_TOKEN"));
    assert!(token.secret);
    assert_eq!(files.config["github_token"], "ghp_s3cret");
    // The stored form reads back as it is (nothing left to read from the environment).
    for server in &catalog.servers {
        let form = server.to_catalog_value(Secrets::Keep);
        let again = catalog::parse_server(&form, &MemSource::default()).expect("reads back");
        assert_eq!(&again, server, "{form}");
    }
}

#[test]
fn oauth_servers_read_round_trip_and_keep_their_client_secret_secret() {
    let yaml = r#"
mcp_servers:
  - name: plain
    url: https://mcp.linear.app/mcp
    auth: oauth
  - name: registered
    url: https://api.githubcopilot.com/mcp/
    auth:
      type: oauth
      client_id: Iv1.abc
      client_secret: "${GH_CLIENT_SECRET}"
      scopes: [repo, read:org]
      client_metadata_url: https://tools.example.com/toolsmith.json
  - name: each
    url: https://mcp.notion.com/mcp
    auth: {type: oauth, connection: per_user}
  - name: asyou
    url: https://mcp.internal.example/mcp
    auth:
      type: oauth
      connection: exchange
      token_endpoint: https://idp.example/oauth2/token
      audience: internal-mcp
      client_id: toolsmith
      client_secret: "${IDP_SECRET}"
"#;
    let source = MemSource::new(&[("c.yaml", yaml)])
        .with_env("GH_CLIENT_SECRET", "cs_s3cret")
        .with_env("IDP_SECRET", "idp_s3cret");
    let catalog = catalog::load("c.yaml", &source).expect("loads");
    assert_eq!(
        catalog.servers[0].resolved_oauth(),
        Some(Default::default())
    );
    let oauth = catalog.servers[1].resolved_oauth().expect("oauth");
    assert_eq!(oauth.client_id.as_deref(), Some("Iv1.abc"));
    assert_eq!(oauth.client_secret.as_deref(), Some("cs_s3cret"));
    assert_eq!(oauth.scopes, ["repo", "read:org"]);
    assert!(!oauth.per_user, "shared unless said");
    assert!(catalog.servers[2].resolved_oauth().expect("oauth").per_user);
    let exchange = catalog.servers[3].resolved_oauth().expect("oauth");
    assert_eq!(
        exchange.exchange,
        Some(toolsmith_core::upstream::TokenExchange {
            token_endpoint: "https://idp.example/oauth2/token".into(),
            audience: Some("internal-mcp".into()),
            forward: false,
        })
    );
    assert_eq!(exchange.client_secret.as_deref(), Some("idp_s3cret"));
    assert!(!exchange.per_user);
    assert_eq!(
        catalog.servers[2].to_catalog_value(Secrets::Keep)["auth"]["connection"],
        "per_user"
    );
    let shown = catalog.servers[1].to_catalog_value(Secrets::Redact);
    assert!(!shown.to_string().contains("cs_s3cret"), "{shown}");
    assert_eq!(shown["auth"]["client_secret"], "{gh_client_secret}");
    assert_eq!(
        catalog.servers[0].to_catalog_value(Secrets::Keep)["auth"],
        "oauth"
    );
    for server in &catalog.servers {
        let form = server.to_catalog_value(Secrets::Keep);
        let again = catalog::parse_server(&form, &MemSource::default()).expect("reads back");
        assert_eq!(&again, server, "{form}");
    }
}

#[test]
fn oauth_settings_that_cannot_work_are_refused_where_written() {
    check(
        r#"
mcp_servers:
  - name: a
    url: http://x/mcp
    auth: basic
  - name: b
    url: http://x/mcp
    auth: {type: oauth, client_secret: s, scopes: ["two words"], client_metadata_url: "http://x/meta.json"}
  - name: c
    url: http://x/mcp
    auth: {type: oauth, client_id: "{missing}"}
  - name: d
    url: http://x/mcp
    auth: {type: oauth, connection: everyone}
  - name: e
    url: http://x/mcp
    auth: {type: oauth, connection: exchange}
  - name: f
    url: http://x/mcp
    auth: {type: oauth, connection: per_user, audience: x}
  - name: g
    url: http://x/mcp
    auth: {type: oauth, connection: forward, token_endpoint: "http://idp/token"}
"#,
        expect![[r#"
            mcp_servers[0].auth: expected `oauth` or a mapping with `type: oauth` (and `client_id`, `client_secret`, `scopes`, `client_metadata_url`, `connection`, `token_endpoint`, `audience`)
            mcp_servers[1].auth.client_secret: a client secret belongs to a pre-registered `client_id`; give both
            mcp_servers[1].auth.scopes: "two words" is not a scope (one word each)
            mcp_servers[1].auth.client_metadata_url: "http://x/meta.json" is not an https URL with a path (a Client ID Metadata Document's address is its client id)
            mcp_servers[2].auth.client_id: {missing} names no config field (known: none)
            mcp_servers[3].auth.connection: "everyone" is not a connection mode (`shared`: one connection for every caller; `per_user`: each caller connects its own account; `exchange`: each caller's JWT exchanged for the server, RFC 8693; `forward`: each caller's JWT sent on when it is for the server too)
            mcp_servers[4].auth.connection: `exchange` needs the identity provider's `token_endpoint` (where callers' tokens are exchanged, RFC 8693, and toolsmith's own is asked for)
            mcp_servers[5].auth.audience: belongs to `connection: exchange` or `forward`
            mcp_servers[6].auth.connection: `forward` needs the `audience` a caller's token must include to be sent on (the server's)
        "#]],
    );
}

#[test]
fn a_stored_server_with_a_dollar_variable_from_before_still_reads() {
    // Stored before `${NAME}` was lifted: kept as text (as it was served), never an error
    // that would make the registry's server unreadable.
    let stored = serde_json::json!({"name": "old", "command": ["node", "s.js"],
        "env": {"TOKEN": "${TOKEN}"}});
    let server = catalog::parse_stored_server(&stored, &MemSource::default()).expect("reads");
    assert_eq!(server.resolved_env()["TOKEN"], "${TOKEN}");
    assert!(catalog::parse_server(&stored, &MemSource::default()).is_err());
}

#[test]
fn dollar_variables_that_cannot_be_read_are_errors_where_they_are_written() {
    check(
        r#"
mcp_servers:
  - name: web
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${NOT_SET}"}
  - name: vs
    command: [node, server.js]
    env: {KEY: "${input:api_key}", TOKEN: "${ALSO_NOT_SET}"}
"#,
        expect![[r#"
            mcp_servers[0].headers.Authorization: environment variable "NOT_SET" is not set (`${NOT_SET}` is read from the environment when the catalog is read)
            mcp_servers[1].env.KEY: `${input:api_key}` asks VS Code's user for a value when the server starts, which toolsmith cannot; write `${NAME}` for an environment variable, or declare a config field
            mcp_servers[1].env.TOKEN: environment variable "ALSO_NOT_SET" is not set (`${ALSO_NOT_SET}` is read from the environment when the catalog is read)
        "#]],
    );
}

#[test]
fn http_tools_tie_their_request_to_their_parameters() {
    check(
        r#"
tools:
  - name: t
    description: d
    http:
      method: GET
      url: "https://{tenant}.example.com/items/{id}?x={y}#frag"
      headers: {"Bad Name": x, X-Ok: "a\r\nb", Host: evil}
      auth: {bearer: token}
    parameters:
      - {name: id, type: object, inject_as: path}
      - {name: q, inject_as: body}
      - {name: h, inject_as: header, http_name: "X Bad"}
      - {name: o, option_name: --o}
  - name: u
    description: d
    http: {method: FETCH, url: "ftp://x/{a}"}
  - name: v
    description: d
    http:
      method: POST
      url: "https://api.example.com/items/{id}"
      body: whole
    parameters:
      - {name: a}
      - {name: b}
  - name: w
    description: d
    http:
      url: "https://api.example.com/{id}/{other}"
      auth: {basic: [user, pass]}
    parameters:
      - {name: id, type: object, inject_as: path, required: false}
      - {name: q, inject_as: body}
      - {name: h, inject_as: header, http_name: "X Bad"}
      - {name: f, type: object, inject_as: query}
      - {name: other, inject_as: path}
      - {name: dup, inject_as: query, http_name: f}
    config_schema: [{name: user, type: integer}]
"#,
        expect![[r#"
            tools[0].http.url: "https://{tenant}.example.com/items/{id}?x={y}#frag": a URL sent to a server has no `#fragment`
            tools[0].http.url: "https://{tenant}.example.com/items/{id}?x={y}#frag": placeholders belong in the path; the host and the query are fixed (query parameters are declared with `inject_as: query`)
            tools[0].http.headers.Bad Name: "Bad Name" is not a header name
            tools[0].http.headers.X-Ok: a header value cannot hold line breaks or control characters
            tools[0].http.headers.Host: `Host` is set by the HTTP client, not the tool
            tools[0].parameters[3].option_name: `option_name` applies to command tools; an http tool's parameters go into the request (`inject_as`: path, query, header or body)
            tools[1].http.method: unknown method "FETCH": one of GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE
            tools[1].http.url: "ftp://x/{a}": only http and https URLs are allowed
            tools[2].http: the URL's `{id}` has no parameter: declare one with `inject_as: path`
            tools[2].http.body: `body: whole` sends one parameter as the entire body; 2 parameters have `inject_as: body`
            tools[3].config.user: missing required config field "user"
            tools[3].parameters[0].type: a path parameter is one segment: a string, number, boolean or enum, not object
            tools[3].parameters[0].required: a path parameter cannot be left out: make it required or give a default
            tools[3].parameters[2].http_name: "X Bad" is not a header name
            tools[3].parameters[3].type: an object cannot go in the query; send it in the body
            tools[3].parameters[5].name: two parameters send "f" in the query
            tools[3].parameters[1].inject_as: a GET request has no body: use `inject_as: query`
            tools[3].http.auth: config field "user" is integer; credentials are strings
            tools[3].http.auth: no config field "pass": declare it in `config_schema` (with `secret: true`)
        "#]],
    );
}

#[test]
fn an_openapi_entry_imports_its_document_and_notes_what_it_left_out() {
    let c = example_catalogs()
        .into_iter()
        .find(|(n, _)| n == "http.yaml")
        .expect("examples/http.yaml")
        .1;
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["forecast", "pet_listPets", "pet_addPet", "pet_getPet"]
    );
    let notes = c.notes.join("\n");
    assert!(
        notes.contains("skipped deletePet") && notes.contains("deprecated"),
        "{notes}"
    );
    assert!(
        notes.contains("skipped uploadPhoto") && notes.contains("multipart/form-data"),
        "{notes}"
    );

    let add = c.get("pet_addPet").expect("pet_addPet");
    assert_eq!(add.danger, toolsmith_core::model::Danger::Dangerous);
    let Executor::Http(call) = &add.executor else {
        panic!("an http tool")
    };
    assert_eq!(call.url, "http://127.0.0.1:8080/api/v3/pets");
    // allOf merged; the read-only `id` left out; `nullable` kept; `name` required.
    let params: Vec<(&str, bool, bool)> = add
        .parameters
        .iter()
        .map(|p| (p.name.as_str(), p.required, p.nullable))
        .collect();
    assert_eq!(
        params,
        [
            ("name", true, false),
            ("category", false, false),
            ("tag", false, true)
        ]
    );
    assert!(
        add.parameters
            .iter()
            .all(|p| http_place(add, &p.name).inject_as == RequestPart::Body)
    );

    let get = c.get("pet_getPet").expect("pet_getPet");
    assert_eq!(get.danger, toolsmith_core::model::Danger::Safe);
    assert!(
        get.description
            .ends_with("Docs: https://example.com/docs/pets#get"),
        "{}",
        get.description
    );
    let pet_id = &get.parameters[0];
    assert_eq!(
        (
            pet_id.name.as_str(),
            http_place(get, &pet_id.name).inject_as
        ),
        ("petId", RequestPart::Path)
    );
    assert_eq!(
        pet_id.constraints.minimum.as_ref().and_then(|n| n.as_i64()),
        Some(1)
    );

    let list = c.get("pet_listPets").expect("pet_listPets");
    let tags = list
        .parameters
        .iter()
        .find(|p| p.name == "tags")
        .expect("tags");
    assert_eq!(
        http_place(list, &tags.name).array_style,
        Some(toolsmith_core::model::ArrayStyle::Join)
    );
    let status = list
        .parameters
        .iter()
        .find(|p| p.name == "status")
        .expect("status");
    assert_eq!(
        status.values,
        vec![
            serde_json::json!("available"),
            serde_json::json!("pending"),
            serde_json::json!("sold")
        ]
    );
    assert_eq!(status.default, Some(serde_json::json!("available")));
}

#[test]
fn a_files_http_allow_hosts_apply_to_its_http_tools_that_name_none() {
    let c = load(
        r#"
defaults: {http_allow_hosts: [api.example.com]}
tools:
  - {name: a, description: d, http: {url: "https://api.example.com/a"}}
  - {name: b, description: d, http: {url: "https://b.example.com/b", allow_hosts: [b.example.com]}}
  - {name: c, description: d, command: ["true"]}
"#,
    );
    let hosts = |name: &str| match &c.get(name).expect("tool").executor {
        Executor::Http(call) => call.allow_hosts.clone(),
        _ => Vec::new(),
    };
    assert_eq!(hosts("a"), ["api.example.com"]);
    assert_eq!(hosts("b"), ["b.example.com"]);
}

/// SPEC §13: `sandbox:` applies where a process starts — command and script tools,
/// `session_start` (its sessions), stdio servers — is inherited from `defaults`, survives the
/// registry's round trip, and is refused, named, anywhere else.
#[test]
fn sandbox_policies_attach_where_processes_start() {
    let text = "defaults:
  sandbox: {network: none}
tools:
  - {name: c, description: d, command: [true]}
  - {name: s, description: d, sandbox: read-only, script: {source: 'print(1)'}}
  - {name: sessions, description: d, builtin: session_start}
  - {name: reader, description: d, builtin: read_file}
mcp_servers:
  - {name: up, command: [npx, server], sandbox: {filesystem: {write: [$HOME/.npm]}}}
";
    let c = catalog::load("c.yaml", &MemSource::new(&[("c.yaml", text)]))
        .unwrap_or_else(|e| panic!("{e}"));
    let policy = |name: &str| c.get(name).and_then(|t| t.sandbox.clone());
    assert_eq!(
        policy("c").map(|s| s.network),
        Some(toolsmith_core::sandbox::Network::None)
    );
    assert_eq!(
        policy("s").map(|s| s.preset),
        Some(toolsmith_core::sandbox::Preset::ReadOnly)
    );
    assert!(
        policy("sessions").is_some(),
        "session_start takes the file's default"
    );
    assert_eq!(policy("reader"), None, "a file built-in starts no process");
    let back = catalog::parse_tool(
        &c.get("s")
            .expect("s")
            .to_catalog_value(toolsmith_core::model::Secrets::Keep),
        &MemSource::new(&[]),
    )
    .expect("round trip");
    assert_eq!(back.sandbox, policy("s"));
    let up = &c.servers[0];
    assert!(
        up.to_catalog_value(toolsmith_core::model::Secrets::Keep)["sandbox"]["filesystem"]["write"]
            [0]
            == "$HOME/.npm"
    );

    let bad = "tools:
  - {name: r, description: d, builtin: read_file, sandbox: none}
  - {name: h, description: d, http: {url: 'https://example.com'}, sandbox: workspace}
  - {name: n, description: d, command: [true], sandbox: {network: loopback}}
mcp_servers:
  - {name: web, url: 'https://example.com/mcp', sandbox: none}
";
    let errors = catalog::load("c.yaml", &MemSource::new(&[("c.yaml", bad)]))
        .expect_err("refused")
        .to_string();
    for needle in [
        "tools[0].sandbox: `sandbox` applies to command and script tools",
        "tools[1].sandbox: `sandbox` applies to command and script tools",
        "tools[2].sandbox.network: `loopback` cannot be enforced",
        "mcp_servers[0].sandbox: `sandbox` applies to stdio servers",
    ] {
        assert!(errors.contains(needle), "{needle} not in:\n{errors}");
    }
}

/// Each kind reads its own places: a request's place on a command's parameter, or a command
/// line's on an http tool's, is an unknown value naming the kind's own; a place not given is
/// the kind's default, and the catalog form writes every http place out.
#[test]
fn a_kind_reads_only_its_own_parameter_places() {
    check(
        r#"
tools:
  - name: c
    description: d
    command: [echo]
    parameters: [{name: a, inject_as: header}]
  - name: h
    description: d
    http: {url: "https://api.example.com/x"}
    parameters: [{name: b, inject_as: env}]
"#,
        expect![[r#"
            tools[0].parameters[0].inject_as: unknown injection "header" (expected one of argument, option, stdin, env)
            tools[1].parameters[0].inject_as: unknown place in the request "env" (expected one of path, query, header, body)
        "#]],
    );
    let c = load(
        r#"
tools:
  - name: c
    description: d
    command: [echo]
    parameters: [{name: a}, {name: o, inject_as: option, option_name: --o}]
  - name: h
    description: d
    http: {url: "https://api.example.com/x"}
    parameters: [{name: q}, {name: k, inject_as: header, http_name: X-Key}]
"#,
    );
    let (cmd, http) = (&c.tools[0], &c.tools[1]);
    assert_eq!(command_place(cmd, "a").inject_as, InjectAs::Argument);
    assert_eq!(command_place(cmd, "o").option_name.as_deref(), Some("--o"));
    assert_eq!(http_place(http, "q").inject_as, RequestPart::Query);
    let form = http.to_catalog_value(Secrets::Keep);
    assert_eq!(
        form["parameters"],
        json!([
            {"name": "q", "type": "string", "inject_as": "query"},
            {"name": "k", "type": "string", "inject_as": "header", "http_name": "X-Key"}
        ])
    );
    assert_eq!(
        cmd.to_catalog_value(Secrets::Keep)["parameters"],
        json!([
            {"name": "a", "type": "string"},
            {"name": "o", "type": "string", "inject_as": "option", "option_name": "--o"}
        ])
    );
}
