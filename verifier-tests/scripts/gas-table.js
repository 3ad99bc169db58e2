// Prints the gas report written by test/solidity.test.js as a Markdown table.
// usage: node scripts/gas-table.js [out/gas.json]

import fs from "node:fs";

const file = process.argv[2] ?? new URL("../out/gas.json", import.meta.url).pathname;
const report = JSON.parse(fs.readFileSync(file, "utf8"));
const rows = [
  "| fixture | k | public inputs | verifyProof execution gas | calldata bytes | verify tx gas (21000 + calldata + execution) | deployment execution gas | runtime code bytes |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
  ...report.results.map((r) =>
    `| ${r.name} | ${r.k ?? "none"} | ${r.nPublic} | ${r.verifyExecutionGas} | ${r.calldataBytes} | ${r.verifyTxGas} | ${r.deployExecutionGas} | ${r.runtimeCodeBytes} |`),
];
console.log(`solc ${report.solc}, optimizer runs ${report.optimizerRuns}, evmVersion ${report.evmVersion}, @ethereumjs/evm hardfork ${report.hardfork}`);
console.log();
console.log(rows.join("\n"));
