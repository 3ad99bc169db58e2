// Compiles a verifier exactly as the tests do (solc-js from package-lock.json, optimizer 200
// runs, evmVersion paris) and prints the deployment artifact as JSON.
// usage: node scripts/compile.js Verifier.sol > Verifier.json

import fs from "node:fs";
import path from "node:path";

import { compile, EVM_VERSION, SOLC_VERSION } from "../lib/evm.js";

const file = process.argv[2];
if (!file) {
  console.error("usage: node scripts/compile.js Verifier.sol > Verifier.json");
  process.exit(2);
}
const c = compile(fs.readFileSync(file, "utf8"), path.basename(file));
for (const w of c.warnings) console.error(w);
console.log(JSON.stringify({
  contract: c.name,
  solc: SOLC_VERSION,
  settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: EVM_VERSION },
  abi: c.abi,
  bytecode: `0x${c.bytecode}`,
  deployedBytecode: `0x${c.deployedBytecode}`,
}, null, 2));
