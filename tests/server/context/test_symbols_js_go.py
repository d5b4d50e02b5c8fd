"""Issue 36, part 2, beyond Python: symbol candidates for JavaScript/TypeScript imports and Go
packages, through the same path (symbol_lookup.py) - through the index and the LSP server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import inline_params, open_document, running_server
from workspace_files import indexed, write

from difill.server.context import symbols_go, symbols_js
from difill.server.context.index import WorkspaceIndex

SHAPES_TS = """export interface Shape { area(): number }
export function circle(r: number): Shape { return { area: () => 3.14 * r * r } }
export const UNIT = 1;
function hidden() {}
export class Square implements Shape {
  constructor(private side: number) {}
  area() { return this.side * this.side }
}
export { hidden as revealed };
"""
USE_TS = """import * as shapes from './shapes';

const a = shapes.circle(2);
const b = shapes.circle(3);
"""
UTIL_GO = """package util

import "strings"

// Clean trims a name.
func Clean(s string) string { return strings.TrimSpace(s) }

func helper() {}

type Options struct {
\tVerbose bool
}

const (
\tMaxRetries = 3
\tdefaultWait = 1
)

func (o Options) Apply() {}
"""
EXTRA_GO = """package util

var Registry = map[string]int{}
"""


def drafts(index: WorkspaceIndex, root: Path, name: str, text: str, language: str) -> list[str]:
    retrieval = index.retrieve((root / name).as_uri(), text, len(text), language)
    return [d.text for d in retrieval.drafts if d.kind == "symbol"]


def test_javascript_imports_and_exports_are_read():
    imports = symbols_js.imports_of(
        "import * as a from './a';\nimport B, { c, d as e, type F } from '../b.js';\n"
        "import {\n  g,\n  h,\n} from './gh';\nconst r = require('./r');\nconst { s } = require('./s');\n"
    )
    assert imports.modules == {"a": "./a", "r": "./r"}
    assert imports.names == {
        "B": ("../b.js", "default"), "c": ("../b.js", "c"), "e": ("../b.js", "d"), "F": ("../b.js", "F"),
        "g": ("./gh", "g"), "h": ("./gh", "h"), "s": ("./s", "s"),
    }  # fmt: skip
    assert symbols_js.exported_names(SHAPES_TS) == ["Shape", "circle", "UNIT", "Square", "revealed"]
    paths = symbols_js.module_paths("./b.js", "src/a.ts")
    assert paths[0] == "/src/b.js" and "/src/b.ts" in paths and "/src/b/index.ts" in paths
    assert symbols_js.module_paths("react", "src/a.ts") == []
    assert symbols_js.module_paths("../../etc/passwd", "src/a.ts") == []  # above the folder
    assert symbols_js.module_paths("/etc/passwd", "src/a.ts") == []


def test_go_imports_packages_and_exports_are_read():
    imports = symbols_go.imports_of(
        'package main\n\nimport (\n\t"fmt"\n\tu "example.com/app/util"\n\t_ "embed"\n\t"example.com/app/api/v2"\n)\n'
    )
    assert imports.modules == {"fmt": "fmt", "u": "example.com/app/util", "api": "example.com/app/api/v2"}
    assert symbols_go.exported_names(UTIL_GO) == ["Clean", "Options", "MaxRetries"]
    mods = symbols_go.GoModules.of([("go.mod", "example.com/app"), ("tools/go.mod", "example.com/app/tools")])
    assert symbols_go.package_directory("example.com/app/util", mods) == "util"
    assert symbols_go.package_directory("example.com/app/tools/gen", mods) == "tools/gen"
    assert symbols_go.package_directory("example.com/app", mods) == ""
    assert symbols_go.package_directory("fmt", mods) is None


@pytest.fixture
def js_workspace(tmp_path):
    root = tmp_path / "ws"
    write(root / "src/shapes.ts", SHAPES_TS)
    write(root / "src/use.ts", USE_TS)
    write(root / "lib/legacy.js", "exports.parse = function () {};\nexports.format = function () {};\n")
    with indexed(root) as index:
        yield root, index


def test_after_a_namespace_import_the_names_the_module_exports(js_workspace):
    root, index = js_workspace
    head = "import * as shapes from './shapes';\n\n"
    # use.ts calls shapes.circle after "=": first; then the module's order; private names never.
    assert drafts(index, root, "src/new.ts", head + "const c = shapes.", "typescript") == [
        "circle", "Shape", "UNIT",
    ]  # fmt: skip
    assert drafts(index, root, "src/new.ts", head + "let s = new shapes.Sq", "typescript") == ["uare"]
    # JavaScript, CommonJS both ways; a package or a missing file names nothing.
    text = "const legacy = require('../lib/legacy');\nlegacy.f"
    assert drafts(index, root, "src/new.js", text, "javascript") == ["ormat"]
    assert drafts(index, root, "src/new.ts", "import * as React from 'react';\nReact.use", "typescript") == []
    assert drafts(index, root, "src/new.ts", "import * as x from './nothere';\nx.ci", "typescript") == []


def test_a_typed_word_gets_the_names_imported_from_a_module(js_workspace):
    root, index = js_workspace
    text = "import { circle, Square } from './shapes';\n\nconst c = cir"
    assert drafts(index, root, "src/new.ts", text, "typescript") == ["cle"]


@pytest.fixture
def go_workspace(tmp_path):
    root = tmp_path / "ws"
    write(root / "go.mod", "module example.com/app\n\ngo 1.22\n")
    write(root / "util/util.go", UTIL_GO)
    write(root / "util/registry.go", EXTRA_GO)
    write(root / "util/util_test.go", "package util\n\nfunc TestClean(t *testing.T) {}\n")
    write(
        root / "cmd/main.go",
        'package main\n\nimport "example.com/app/util"\n\nfunc main() {\n\tutil.Clean("x")\n}\n',
    )
    with indexed(root) as index:
        yield root, index


def test_after_a_workspace_package_its_exported_names(go_workspace):
    root, index = go_workspace
    head = 'package main\n\nimport (\n\t"fmt"\n\t"example.com/app/util"\n)\n\nfunc run() {\n'
    # Both files of the package, not its test file; main.go's use of util.Clean first.
    assert drafts(index, root, "cmd/run.go", head + "\tutil.", "go") == ["Clean", "Registry", "Options"]
    assert drafts(index, root, "cmd/run.go", head + "\tn := util.Ma", "go") == ["xRetries"]
    assert drafts(index, root, "cmd/run.go", head + "\tutil.Te", "go") == []
    assert drafts(index, root, "cmd/run.go", head + "\tfmt.Pr", "go") == []  # the standard library


async def test_typescript_and_go_candidates_are_ghost_text_through_the_server(tiny_model_dir, tmp_path):
    root = tmp_path / "ws"
    write(root / "src/shapes.ts", SHAPES_TS)
    write(root / "go.mod", "module example.com/app\n")
    write(root / "util/util.go", UTIL_GO)
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=root.as_uri()) as client:
        ts_uri = (root / "src/new.ts").as_uri()
        ts_text = "import * as shapes from './shapes';\n\nconst s = new shapes.Sq"
        open_document(client, ts_uri, ts_text, "typescript")
        go_uri = (root / "cmd/main.go").as_uri()
        go_text = 'package main\n\nimport "example.com/app/util"\n\nfunc main() {\n\tn := util.Ma'
        open_document(client, go_uri, go_text, "go")
        shown = {}
        for uri, text in ((ts_uri, ts_text), (go_uri, go_text)):
            line, character = text.count("\n"), len(text.rsplit("\n", 1)[-1])
            for _ in range(100):  # the index builds in the background; the server answers meanwhile
                result = await client.text_document_inline_completion_async(
                    inline_params(uri, line, character, invoked=False)
                )
                if result.items:
                    break
            shown[uri] = [item.insert_text for item in result.items][:1]
        assert shown == {ts_uri: ["uare"], go_uri: ["xRetries"]}


def test_reexports_and_tsconfig_paths_are_followed(tmp_path):
    """Issue 46: ``export * from`` (an index that gathers a folder), ``export * as x from``, and a
    bare specifier that tsconfig.json's ``paths`` maps (``@/shapes``) name the same module."""
    root = tmp_path / "ws"
    write(root / "src/shapes.ts", SHAPES_TS)
    write(root / "src/extra.ts", "export function hexagon() {}\n")
    write(root / "src/index.ts", "export * from './shapes';\nexport * from './extra';\nexport * as more from './extra';\n")
    write(root / "src/loop.ts", "export * from './loop2';\nexport const A = 1;\n")
    write(root / "src/loop2.ts", "export * from './loop';\nexport const B = 2;\n")
    write(root / "tsconfig.json", '{\n  // aliases\n  "compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"],},},\n}\n')
    with indexed(root) as index:
        head = "import * as all from './index';\n\n"
        found = drafts(index, root, "src/app.ts", head + "all.", "typescript")
        assert len(found) >= 2 and set(found) <= {"circle", "Shape", "UNIT", "Square", "revealed", "hexagon", "more"}
        assert drafts(index, root, "src/app.ts", head + "all.hex", "typescript") == ["agon"]
        assert drafts(index, root, "src/app.ts", head + "all.mo", "typescript") == ["re"]
        aliased = "import * as shapes from '@/shapes';\n\nshapes.Squ"
        assert drafts(index, root, "lib/app.ts", aliased, "typescript") == ["are"]
        cycle = "import * as l from './loop';\n\nl."
        assert set(drafts(index, root, "src/app.ts", cycle, "typescript")) == {"A", "B"}


def test_a_nested_go_module_resolves_by_its_own_go_mod(tmp_path):
    """Issue 46: a module inside another (tools/go.mod) owns its import paths."""
    root = tmp_path / "ws"
    write(root / "go.mod", "module example.com/app\n\ngo 1.22\n")
    write(root / "util/util.go", UTIL_GO)
    write(root / "tools/go.mod", "module example.com/devtools\n\ngo 1.22\n")
    write(root / "tools/gen/gen.go", "package gen\n\nfunc Generate() {}\n\nconst Version = 1\n")
    with indexed(root) as index:
        head = 'package main\n\nimport "example.com/devtools/gen"\n\nfunc run() {\n'
        assert drafts(index, root, "cmd/run.go", head + "\tgen.Gen", "go") == ["erate"]
        outer = 'package main\n\nimport "example.com/app/tools/gen"\n\nfunc run() {\n'
        assert drafts(index, root, "cmd/run.go", outer + "\tgen.Gen", "go") == []  # not the outer module's
