#!/usr/bin/env python3
"""Fail if Cargo.lock holds a package that needs a newer Rust than ours.

The workspace declares `rust-version` (the MSRV). Only the current stable
toolchain runs in CI, so the MSRV is checked in two halves: clippy's
`incompatible_msrv` lint for the std APIs our own code calls, and this
script for the dependencies: every package in Cargo.lock that declares a
`rust-version` must declare one no newer than the MSRV. Packages reachable
from a published crate through normal or build dependencies are what a
user compiles; the rest (dev-dependencies, the examples and tests crates)
only the contributors, and both are checked (the message says which).
Packages that declare no `rust-version` cannot be checked and are only
counted.

The workspace's resolver ("3") and `.cargo/config.toml` pick, when the lock
is regenerated, the newest version of each dependency whose `rust-version`
fits, so a failure here means a dependency has no such version (or a
requirement in a Cargo.toml rules it out), or the lock was generated some
other way.
"""

import json
import subprocess
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    packages = {package["id"]: package for package in metadata["packages"]}
    members = [packages[id] for id in metadata["workspace_members"]]

    declared = {member["name"]: member["rust_version"] for member in members}
    if None in declared.values() or len(set(declared.values())) != 1:
        sys.exit(f"every workspace member must declare the same rust-version: {declared}")
    msrv_text = members[0]["rust_version"]
    msrv = version(msrv_text)

    # What a user of a published crate compiles: its normal and build
    # dependencies, with every feature on (features are part of the promise).
    deps = {
        node["id"]: [
            dep["pkg"]
            for dep in node["deps"]
            if any(kind["kind"] != "dev" for kind in dep["dep_kinds"])
        ]
        for node in metadata["resolve"]["nodes"]
    }
    published = [member["id"] for member in members if member["publish"] is None]
    shipped, stack = set(), list(published)
    while stack:
        id = stack.pop()
        if id not in shipped:
            shipped.add(id)
            stack.extend(deps[id])

    too_new, unknown = [], 0
    for id, package in sorted(packages.items(), key=lambda item: item[1]["name"]):
        if package["rust_version"] is None:
            unknown += 1
        elif version(package["rust_version"]) > msrv:
            who = "published crates" if id in shipped else "dev/examples/tests only"
            too_new.append(
                f"  {package['name']} {package['version']} needs Rust "
                f"{package['rust_version']} ({who})"
            )

    if too_new:
        print(f"Cargo.lock needs a newer Rust than the MSRV, {msrv_text}:", file=sys.stderr)
        print("\n".join(too_new), file=sys.stderr)
        print(
            "Regenerate the lock (`cargo update`; the resolver falls back to versions that "
            "fit), pin the dependency lower, or raise `rust-version` in Cargo.toml.",
            file=sys.stderr,
        )
        sys.exit(1)
    print(
        f"MSRV {msrv_text}: {len(packages) - unknown} of the {len(packages)} packages in "
        f"Cargo.lock declare a rust-version, none newer; {unknown} declare none. "
        f"{len(shipped) - len(published)} of the {len(packages)} are what the published crates "
        f"{', '.join(packages[id]['name'] for id in published)} compile (all features, "
        f"all platforms)"
    )


if __name__ == "__main__":
    main()
