// SPDX-License-Identifier: GPL-2.0-only
//! The source layout holds what DEVELOPING.md says of it: no file of
//! src/ imports, directly or through others, a file that imports it back.
//! Runs on the host, reading src/ as text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every .rs file under src/, as its module path (`labels::tag`).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let mut pre = prefix.to_vec();
            pre.push(name);
            modules(&p, &pre, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let mut m = prefix.to_vec();
            if name != "mod" && name != "main" {
                m.push(name);
            }
            out.insert(m, p);
        }
    }
}

/// The code of a file without its comments and its unit tests.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a file names through `crate::` and `super::`, braces
/// expanded (`crate::labels::{agent, cgroups}`), as absolute module paths.
fn named_paths(text: &str, own: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for anchor in ["crate::", "super::"] {
        for (i, _) in text.match_indices(anchor) {
            if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &text[i + anchor.len()..];
            let mut base: Vec<String> = if anchor == "crate::" {
                Vec::new()
            } else {
                // A module's parent (a mod.rs is its folder's module).
                own[..own.len().saturating_sub(1)].to_vec()
            };
            let mut chars = rest.chars().peekable();
            let mut word = String::new();
            loop {
                match chars.next() {
                    Some(c) if c.is_alphanumeric() || c == '_' => word.push(c),
                    Some(':') if chars.peek() == Some(&':') => {
                        chars.next();
                        base.push(std::mem::take(&mut word));
                        if chars.peek() == Some(&'{') {
                            chars.next();
                            let inner: String = chars.by_ref().take_while(|c| *c != '}').collect();
                            for item in inner.split(',') {
                                let item = item.trim().split("::").next().unwrap_or("").trim();
                                if !item.is_empty() && item != "self" {
                                    let mut p = base.clone();
                                    p.push(item.to_string());
                                    out.push(p);
                                }
                            }
                            out.push(base.clone());
                            break;
                        }
                    }
                    _ => {
                        if !word.is_empty() {
                            base.push(word);
                        }
                        out.push(base);
                        break;
                    }
                }
            }
        }
    }
    out
}

#[test]
fn src_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    modules(&src, &[], &mut mods);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, path) in &mods {
        let text = code(&std::fs::read_to_string(path).unwrap());
        for p in named_paths(&text, m) {
            // The longest prefix of the path that is a file of src/.
            let target = (1..=p.len())
                .rev()
                .map(|n| p[..n].to_vec())
                .find(|prefix| mods.contains_key(prefix));
            if let Some(t) = target {
                // A file and the folder's mod.rs that declares it are one
                // module tree, not an import.
                if &t != m && !m.starts_with(&t) {
                    edges.entry(m.clone()).or_default().insert(t);
                }
            }
        }
    }
    // Depth-first search for a path that comes back to where it began.
    fn visit(
        at: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        stack: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if let Some(i) = stack.iter().position(|s| s == at) {
            let mut circle = stack[i..].to_vec();
            circle.push(at.clone());
            return Some(circle);
        }
        if done.contains(at) {
            return None;
        }
        stack.push(at.clone());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(at.clone());
        None
    }
    let mut done = BTreeSet::new();
    for m in mods.keys() {
        if let Some(circle) = visit(m, &edges, &mut Vec::new(), &mut done) {
            let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
            panic!("src/ imports in a circle: {}", names.join(" -> "));
        }
    }
    // The check sees the imports it is meant to see.
    let tag = edges.get(&vec!["labels".to_string(), "tag".to_string()]);
    assert!(
        tag.is_some_and(|t| t.contains(&vec!["labels".to_string(), "agent".to_string()])),
        "labels::tag's imports were not found: {tag:?}"
    );
}
