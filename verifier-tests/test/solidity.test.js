// The generated Solidity verifier, compiled with solc-js and run in @ethereumjs/evm, must accept
// our proofs (passed in the reference response's order) and reject tampered ones without
// reverting. Gas is written to $OUT_DIR/gas.json.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

import { loadFixtures, committedExports, clone, R, P, OUT_DIR } from "../lib/fixtures.js";
import {
  compile, newEVM, deploy, verifyCalldata, calldataGas, call, decodeWord,
  EVM_VERSION, HARDFORK, SOLC_VERSION,
} from "../lib/evm.js";

const fixtures = loadFixtures();
const gas = [];
let evm;

before(async () => {
  evm = await newEVM();
});

after(() => {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const report = { solc: SOLC_VERSION, evmVersion: EVM_VERSION, hardfork: HARDFORK, optimizerRuns: 200, results: gas };
  fs.writeFileSync(path.join(OUT_DIR, "gas.json"), `${JSON.stringify(report, null, 2)}\n`);
});

for (const fx of fixtures) {
  const n = fx.meta.nPublic;
  const signature = `verifyProof(uint256[2],uint256[2][2],uint256[2],uint256[${n}])`;
  let compiled;
  let address;
  let selector;

  const verifyResponse = async (response) => {
    const res = await call(evm, address, verifyCalldata(selector, response));
    assert.equal(res.reverted, false, `verifyProof reverted: ${res.error}`);
    const v = decodeWord(res.returnValue);
    assert.ok(v === 0n || v === 1n, `not a bool: ${v}`);
    return { ok: v === 1n, gasUsed: res.gasUsed };
  };

  const committed = committedExports(fx);
  if (committed) {
    test(`${fx.name}: Verifier.sol is the committed ${path.basename(committed.solidityFile)}`, () => {
      assert.ok(fs.existsSync(committed.solidityFile), `${committed.solidityFile} is missing`);
      assert.equal(fx.solidity, fs.readFileSync(committed.solidityFile, "utf8"));
    });
  }

  test(`${fx.name}: Verifier.sol compiles cleanly with solc ${SOLC_VERSION}`, () => {
    compiled = compile(fx.solidity);
    assert.equal(compiled.name, fx.meta.contract ?? compiled.name);
    assert.deepEqual(compiled.warnings, [], "solc warnings");
    selector = compiled.selectors[signature];
    assert.ok(selector, `no ${signature} in ${Object.keys(compiled.selectors).join(", ")}`);
    assert.ok(compiled.deployedBytecode.length / 2 <= 24576, "runtime code over the EIP-170 limit");
  });

  test(`${fx.name}: deploys and reports PUBLIC_INPUTS = ${n}`, async () => {
    const d = await deploy(evm, compiled.bytecode);
    address = d.address;
    fx.deployGas = d.gasUsed;
    const res = await call(evm, address, Buffer.from(compiled.selectors["PUBLIC_INPUTS()"], "hex"));
    assert.equal(res.reverted, false);
    assert.equal(decodeWord(res.returnValue), BigInt(n));
  });

  test(`${fx.name}: verifyProof returns true for the proof`, async (t) => {
    const { ok, gasUsed } = await verifyResponse(fx.response);
    assert.equal(ok, true);
    // Each call is its own transaction (lib/evm.js, beginTransaction): the gas of a call does
    // not depend on what ran before it.
    assert.equal((await verifyResponse(fx.response)).gasUsed, gasUsed, "gas of a repeated call");
    const data = verifyCalldata(selector, fx.response);
    const entry = {
      name: fx.name, k: fx.meta.k, nPublic: n, source: fx.meta.source,
      verifyExecutionGas: Number(gasUsed),
      calldataBytes: data.length,
      calldataGas: calldataGas(data),
      verifyTxGas: 21000 + calldataGas(data) + Number(gasUsed),
      deployExecutionGas: Number(fx.deployGas),
      runtimeCodeBytes: compiled.deployedBytecode.length / 2,
    };
    gas.push(entry);
    t.diagnostic(`gas: verifyProof execution ${entry.verifyExecutionGas}, as a transaction ${entry.verifyTxGas}, deployment ${entry.deployExecutionGas}`);
  });

  test(`${fx.name}: verifyProof returns false for tampered proofs and inputs`, async () => {
    const r = fx.response;
    const last = r.public_signal.length - 1;
    const cases = [];
    const variant = (what, edit) => {
      const v = clone(r);
      edit(v);
      cases.push([what, v]);
    };
    variant("public[0] + 1", (v) => { v.public_signal[0] = ((BigInt(v.public_signal[0]) + 1n) % R).toString(); });
    variant("public[last] + 1", (v) => { v.public_signal[last] = ((BigInt(v.public_signal[last]) + 1n) % R).toString(); });
    // Same value mod r: only the range check stops it (ecMul would reduce it).
    variant("public[0] + r", (v) => { v.public_signal[0] = (BigInt(v.public_signal[0]) + R).toString(); });
    variant("public[last] = 2^256 - 1", (v) => { v.public_signal[last] = ((1n << 256n) - 1n).toString(); });
    variant("inputs reversed", (v) => { v.public_signal.reverse(); });
    variant("pi_b in snarkjs's (c0, c1) order", (v) => { v.pi_b = [[r.pi_b[0][1], r.pi_b[0][0]], [r.pi_b[1][1], r.pi_b[1][0]]]; });
    variant("pi_b x and y swapped", (v) => { v.pi_b = [r.pi_b[1], r.pi_b[0]]; });
    variant("A and C swapped", (v) => { v.pi_a = r.pi_c; v.pi_c = r.pi_a; });
    variant("A negated", (v) => { v.pi_a = [r.pi_a[0], (P - BigInt(r.pi_a[1])).toString()]; });
    variant("A.y + 1 (off the curve)", (v) => { v.pi_a[1] = ((BigInt(r.pi_a[1]) + 1n) % P).toString(); });
    variant("A.x + p", (v) => { v.pi_a[0] = (BigInt(r.pi_a[0]) + P).toString(); });
    variant("C.y + p", (v) => { v.pi_c[1] = (BigInt(r.pi_c[1]) + P).toString(); });
    variant("B.x.c1 + p", (v) => { v.pi_b[0][0] = (BigInt(r.pi_b[0][0]) + P).toString(); });
    variant("A = infinity", (v) => { v.pi_a = ["0", "0"]; });
    for (const [what, v] of cases) {
      const { ok } = await verifyResponse(v);
      assert.equal(ok, false, what);
    }
    // Still true for the original (the EVM state is unchanged).
    assert.equal((await verifyResponse(r)).ok, true);
  });

  test(`${fx.name}: calldata of the wrong length reverts`, async () => {
    const data = verifyCalldata(selector, fx.response);
    const res = await call(evm, address, data.subarray(0, data.length - 32));
    assert.equal(res.reverted, true);
  });
}
