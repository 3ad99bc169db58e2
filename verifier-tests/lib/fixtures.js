// Loads the fixture directories written by enygma-verifier (see ../README.md, "Fixtures").
//
// FIXTURES_DIR (default: ./fixtures next to package.json) holds one directory per case, each
// with verification_key.json, proof.json, public.json, response.json, Verifier.sol and meta.json.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export const FIXTURES_DIR = path.resolve(process.env.FIXTURES_DIR ?? path.join(here, "..", "fixtures"));
export const OUT_DIR = path.resolve(process.env.OUT_DIR ?? path.join(here, "..", "out"));
/** The repository's keys/, with the committed verifier exports (keys/{stem}.verification_key.json, keys/{contract}.sol). */
export const KEYS_DIR = path.resolve(process.env.KEYS_DIR ?? path.join(here, "..", "..", "keys"));

const FILES = ["verification_key.json", "proof.json", "public.json", "response.json", "Verifier.sol", "meta.json"];

const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));

/** All fixture cases, sorted by k then name. Throws if there are none, so a run never passes empty. */
export function loadFixtures() {
  if (!fs.existsSync(FIXTURES_DIR)) {
    throw new Error(`fixtures directory ${FIXTURES_DIR} does not exist (run ./run.sh, or set FIXTURES_DIR)`);
  }
  const cases = [];
  for (const entry of fs.readdirSync(FIXTURES_DIR, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(FIXTURES_DIR, entry.name);
    const missing = FILES.filter((f) => !fs.existsSync(path.join(dir, f)));
    if (missing.length === FILES.length) continue; // not a fixture directory
    if (missing.length > 0) throw new Error(`${dir}: missing ${missing.join(", ")}`);
    cases.push({
      name: entry.name,
      dir,
      meta: readJson(path.join(dir, "meta.json")),
      vk: readJson(path.join(dir, "verification_key.json")),
      proof: readJson(path.join(dir, "proof.json")),
      publicSignals: readJson(path.join(dir, "public.json")),
      response: readJson(path.join(dir, "response.json")),
      vkText: fs.readFileSync(path.join(dir, "verification_key.json"), "utf8"),
      solidity: fs.readFileSync(path.join(dir, "Verifier.sol"), "utf8"),
    });
  }
  if (cases.length === 0) throw new Error(`no fixtures in ${FIXTURES_DIR}`);
  cases.sort((a, b) => (a.meta.k ?? 0) - (b.meta.k ?? 0) || a.name.localeCompare(b.name));
  return cases;
}

/**
 * For a fixture made with one of the repository's keys, the files committed for it in KEYS_DIR
 * (named by the fixture's meta.json, "committed"): { vkFile, solidityFile }. null for other
 * fixtures (toy).
 */
export function committedExports(fx) {
  const c = fx.meta.committed;
  if (c == null) return null;
  return {
    vkFile: path.join(KEYS_DIR, c.verificationKey),
    solidityFile: path.join(KEYS_DIR, c.solidity),
  };
}

/** BN254 scalar field order r and base field modulus p. */
export const R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
export const P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;

/**
 * Independent conversion of a reference response (G2 as (c1, c0)) into snarkjs's proof.json
 * (G2 as (c0, c1), projective), to check the Rust export against.
 */
export function responseToSnarkjsProof(r) {
  return {
    pi_a: [r.pi_a[0], r.pi_a[1], "1"],
    pi_b: [
      [r.pi_b[0][1], r.pi_b[0][0]],
      [r.pi_b[1][1], r.pi_b[1][0]],
      ["1", "0"],
    ],
    pi_c: [r.pi_c[0], r.pi_c[1], "1"],
    protocol: "groth16",
    curve: "bn128",
  };
}

export const clone = (x) => JSON.parse(JSON.stringify(x));
