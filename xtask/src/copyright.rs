// SPDX-License-Identifier: GPL-2.0-only
//! The package's copyright file (machine-readable, copyright-format 1.0):
//! the project's own stanza (deploy/debian/copyright), then one stanza for
//! each crate linked into the agent and one for libbpf, which libbpf-sys
//! builds into it, each license named once with its terms. Generated from
//! cargo's own resolve of the agent's dependencies, so a new dependency is
//! listed the day it is added, and one under a license with no text here
//! stops the package build, naming what to add.
//!
//! Linked means what cargo tree lists of the agent's normal dependencies
//! without proc-macros (they run in the compiler and ship nothing), and
//! without build and dev dependencies. libelf and zlib are linked
//! dynamically: the package depends on Debian's.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// License terms Debian ships in /usr/share/common-licenses, by the SPDX
/// name crates give.
const COMMON_LICENSES: [(&str, &str); 3] = [
    ("Apache-2.0", "Apache-2.0"),
    ("LGPL-2.1-only", "LGPL-2.1"),
    ("MPL-2.0", "MPL-2.0"),
];

/// The crate a dependency listing starts from: the agent.
const AGENT: &str = "scx_linger";

/// The target the package is built for.
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// One linked crate: what its stanza says.
struct Crate {
    name: String,
    version: String,
    authors: Vec<String>,
    license: String,
}

/// The whole copyright file for the package.
pub fn render(root: &Path) -> Result<String> {
    let head = std::fs::read_to_string(root.join("deploy/debian/copyright"))
        .context("reading deploy/debian/copyright")?;
    let crates = linked_crates(root)?;
    let mut out = head.trim_end().to_string();
    out.push_str("\n\n");
    let mut names = BTreeSet::new();
    for c in &crates {
        let license = debian_expression(&c.license)
            .with_context(|| format!("crate {} {}", c.name, c.version))?;
        names.extend(license_names(&license));
        let copyright = if c.authors.is_empty() {
            format!("the {} authors", c.name)
        } else {
            c.authors.join("\n ")
        };
        out.push_str(&format!(
            "Files: crates/{}-{}/*\nCopyright: {copyright}\nLicense: {license}\n\n",
            c.name, c.version
        ));
        if c.name == "libbpf-sys" {
            let libbpf = "LGPL-2.1-only or BSD-2-Clause";
            names.extend(license_names(libbpf));
            out.push_str(&format!(
                "Files: crates/{}-{}/libbpf/*\nCopyright: the libbpf authors\nLicense: {libbpf}\n\
                 Comment: libbpf, which libbpf-sys builds and links into the agent.\n\n",
                c.name, c.version
            ));
        }
    }
    // The project's own license has its paragraph in the head.
    names.remove("GPL-2.0-only");
    for name in names {
        out.push_str(&license_paragraph(root, &name)?);
        out.push('\n');
    }
    Ok(out.trim_end().to_string() + "\n")
}

/// The crates linked into the agent: cargo tree's list of them (normal
/// dependencies for the package's target, no proc-macros), each with what
/// cargo metadata says of it.
fn linked_crates(root: &Path) -> Result<Vec<Crate>> {
    let cargo = |args: &[&str]| -> Result<Vec<u8>> {
        let out = Command::new(env!("CARGO"))
            .args(args)
            .current_dir(root)
            .output()
            .with_context(|| format!("running cargo {}", args[0]))?;
        if !out.status.success() {
            bail!(
                "cargo {} failed: {}",
                args[0],
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    };
    let tree = cargo(&[
        "tree",
        "--package",
        AGENT,
        "--edges",
        "normal,no-proc-macro",
        "--target",
        TARGET,
        "--prefix",
        "none",
        "--format",
        "{p}",
    ])?;
    let linked: BTreeSet<(String, String)> = String::from_utf8_lossy(&tree)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let version = w.next()?.strip_prefix('v')?.to_string();
            Some((name, version))
        })
        .filter(|(name, _)| name != AGENT)
        .collect();
    let meta: Value = serde_json::from_slice(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--filter-platform",
        TARGET,
    ])?)
    .context("cargo metadata's JSON")?;
    let packages = meta["packages"]
        .as_array()
        .context("cargo metadata lists no packages")?;
    linked
        .into_iter()
        .map(|(name, version)| {
            let p = packages
                .iter()
                .find(|p| p["name"] == name.as_str() && p["version"] == version.as_str())
                .with_context(|| format!("cargo metadata does not list {name} {version}"))?;
            Ok(Crate {
                authors: p["authors"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| Some(s.as_str()?.to_string()))
                            .collect()
                    })
                    .unwrap_or_default(),
                license: p["license"].as_str().unwrap_or_default().to_string(),
                name,
                version,
            })
        })
        .collect()
}

/// A crate's SPDX expression in copyright-format's syntax: `or`, `and`,
/// `with X exception`, and a comma where `and` joins a group of `or`s
/// (the format has no parentheses). The old `MIT/Apache-2.0` is `or`.
fn debian_expression(spdx: &str) -> Result<String> {
    if spdx.trim().is_empty() {
        bail!("no license in its Cargo.toml");
    }
    let words = |s: &str| -> Result<String> {
        let mut out = Vec::new();
        let mut tokens = s.split_whitespace().peekable();
        while let Some(t) = tokens.next() {
            match t {
                "OR" => out.push("or".to_string()),
                "AND" => out.push("and".to_string()),
                "WITH" => {
                    let exception = tokens.next().context("WITH names no exception")?;
                    let keyword = exception.strip_suffix("-exception").unwrap_or(exception);
                    out.push(format!("with {keyword} exception"));
                }
                t if t.contains(['(', ')']) => {
                    bail!("license {spdx:?}: parentheses other than (A OR B) AND C")
                }
                t => out.push(t.split('/').collect::<Vec<_>>().join(" or ")),
            }
        }
        Ok(out.join(" "))
    };
    match spdx.strip_prefix('(').and_then(|r| r.split_once(") AND ")) {
        Some((group, rest)) => Ok(format!("{}, and {}", words(group)?, words(rest)?)),
        None => words(spdx),
    }
}

/// The license names in a copyright-format expression.
fn license_names(expr: &str) -> BTreeSet<String> {
    let mut expr = expr.replace(',', " ");
    // `with X exception` names an exception, whose terms go with its license.
    while let Some(at) = expr.find(" with ") {
        let end = expr[at..]
            .find(" exception")
            .map_or(expr.len(), |e| at + e + " exception".len());
        let keyword = expr[at + " with ".len()..end - " exception".len()].to_string();
        expr.replace_range(at..end, &format!(" or {keyword}-exception"));
    }
    expr.split_whitespace()
        .filter(|w| *w != "or" && *w != "and")
        .map(str::to_string)
        .collect()
}

/// A stand-alone License paragraph for `name`: its terms from
/// deploy/debian/licenses/, or a pointer to Debian's copy.
fn license_paragraph(root: &Path, name: &str) -> Result<String> {
    if let Some((_, file)) = COMMON_LICENSES.iter().find(|(n, _)| *n == name) {
        return Ok(format!(
            "License: {name}\n On Debian systems, the full text of this license can be found in\n '/usr/share/common-licenses/{file}'.\n"
        ));
    }
    let path = root.join("deploy/debian/licenses").join(name);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "a crate linked into the agent is under {name}, which has no terms in {}: add the license's text there",
            path.display()
        )
    })?;
    let body: Vec<String> = text
        .trim()
        .lines()
        .map(|l| {
            if l.trim().is_empty() {
                " .".to_string()
            } else {
                format!(" {}", l.trim_end())
            }
        })
        .collect();
    Ok(format!("License: {name}\n{}\n", body.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spdx_expressions_read_as_copyright_format() {
        for (spdx, debian) in [
            ("MIT OR Apache-2.0", "MIT or Apache-2.0"),
            ("MIT/Apache-2.0", "MIT or Apache-2.0"),
            (
                "(MIT OR Apache-2.0) AND Unicode-3.0",
                "MIT or Apache-2.0, and Unicode-3.0",
            ),
            (
                "Apache-2.0 WITH LLVM-exception OR MIT",
                "Apache-2.0 with LLVM exception or MIT",
            ),
        ] {
            assert_eq!(debian_expression(spdx).unwrap(), debian, "{spdx}");
        }
        assert!(debian_expression("").is_err());
        assert!(debian_expression("MIT AND (Zlib OR ISC)").is_err());
    }

    #[test]
    fn each_license_and_exception_is_named_once() {
        let names = license_names("Apache-2.0 with LLVM exception or MIT, and Unicode-3.0");
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            ["Apache-2.0", "LLVM-exception", "MIT", "Unicode-3.0"]
        );
    }
}
