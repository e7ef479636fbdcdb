'use strict';

// index.d.ts is compiled, and checked against the code: test/types/usage.ts uses every export
// with the field names the code has, and the option paths, the exporter names and the module's
// exports are compared with lib/agent/options.js, exporters/index.js and lib/index.js.

const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const ts = require('typescript');
const { SETTINGS } = require('../../lib/agent/options');
const { EXPORTERS } = require('../../exporters');

const ROOT = path.join(__dirname, '..', '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const DECLARATIONS = path.join(ROOT, 'index.d.ts');

/** The checker of a program holding index.d.ts alone, and the module's exported symbols. */
function declarations() {
  const program = ts.createProgram([DECLARATIONS], {
    strict: true, noEmit: true, types: ['node'], module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16,
  });
  const checker = program.getTypeChecker();
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(DECLARATIONS)));
  const type = (name) => checker.getDeclaredTypeOfSymbol(exported.find((s) => s.name === name));
  return { checker, exported, type };
}

/** Every option path of the Options interface: 'intervalMs', 'prometheus.port', ... (groups one level deep). */
function optionPaths({ checker, type }, groups) {
  const out = [];
  for (const prop of type('Options').getProperties()) {
    if (!groups.has(prop.name)) {
      out.push(prop.name);
      continue;
    }
    const group = checker.getNonNullableType(checker.getTypeOfSymbol(prop));
    for (const inner of group.getProperties()) out.push(`${prop.name}.${inner.name}`);
  }
  return out.sort();
}

describe('index.d.ts', function () {
  this.timeout(120000);
  let decl;
  before(() => {
    decl = declarations();
  });

  it('test/types/usage.ts compiles with tsc --strict (every export used, the @ts-expect-error lines still errors)', () => {
    let out = '';
    let status = 0;
    try {
      execFileSync(process.execPath, [TSC, '-p', path.join(__dirname)], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      status = err.status;
      out = `${err.stdout || ''}${err.stderr || ''}`;
    }
    assert.equal(status, 0, `tsc -p test/types failed:\n${out}`);
  });

  it('the example keeps its must-fail lines: a misspelt option, a wrong type, an unknown exporter', () => {
    const source = fs.readFileSync(path.join(__dirname, 'usage.ts'), 'utf8');
    for (const what of ['a misspelt option name', 'a port is a number, not a string', 'an exporter uvscope does not have']) {
      assert.match(source, new RegExp(`// @ts-expect-error ${what}\\n`), what);
    }
  });

  it('declares what lib/index.js exports, values and names alike', () => {
    const declared = decl.exported.filter((s) => s.flags & ts.SymbolFlags.Value).map((s) => s.name).sort();
    assert.deepEqual(declared, Object.keys(require('../../lib/index')).sort());
  });

  it('Options has one property per setting of start(options) (lib/agent/options.js SETTINGS)', () => {
    const paths = SETTINGS.filter((s) => !s.late).map((s) => s.path);
    const groups = new Set(paths.filter((p) => p.includes('.')).map((p) => p.split('.')[0]));
    assert.deepEqual(optionPaths(decl, groups), paths.sort());
  });

  it('ExporterName is the exporters of exporters/index.js, and each has the entry point package.json exports', () => {
    const union = decl.type('ExporterName');
    const names = (union.isUnion() ? union.types : [union]).map((t) => t.value).sort();
    assert.deepEqual(names, EXPORTERS.map((e) => e.name).sort());
    for (const name of names) {
      assert.equal(typeof require(`uvscope/exporters/${name}`).createExporter, 'function', name);
    }
  });
});
