//! A tool's `config`: values written `"${NAME}"` read from the environment, then coerced,
//! defaulted and validated against its `config_schema`.

use super::*;

impl Loader<'_> {
    /// Config values: `"${NAME}"` read from the environment, then coerced, defaulted and
    /// validated against the config schema.
    pub(super) fn config(
        &self,
        f: &Fields<'_>,
        schema: &[Parameter],
        e: &mut Errs,
    ) -> Map<String, Value> {
        let at = f.at("config");
        let mut values = match f.get("config") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                e.push(&at, "expected a mapping of config values");
                return Map::new();
            }
        };
        let errors_before = e.list.len();
        for (key, v) in values.iter_mut() {
            let Some(name) = v
                .as_str()
                .and_then(|s| s.strip_prefix("${"))
                .and_then(|s| s.strip_suffix('}'))
            else {
                continue;
            };
            match self.src.var(name) {
                Some(val) => *v = Value::String(val),
                None => e.push(
                    &join(&at, key),
                    format!("environment variable {name:?} is not set"),
                ),
            }
        }
        if e.list.len() != errors_before || (schema.is_empty() && values.is_empty()) {
            return values;
        }
        let set = match ParamSet::new(schema).map(|s| s.noun("config field")) {
            Ok(s) => s,
            Err(m) => {
                e.push(
                    &f.at("config_schema"),
                    format!("cannot build the config schema: {m}"),
                );
                return values;
            }
        };
        match set.prepare(schema, values, true) {
            Ok(p) => p.arguments,
            Err(problems) => {
                for p in problems {
                    e.push(&format!("{at}{}", p.pointer.replace('/', ".")), p.message);
                }
                Map::new()
            }
        }
    }
}
