// Bundles the extension into dist/extension.js (one file, so the .vsix ships no node_modules).
//
//   node esbuild.mjs               development build with source maps
//   node esbuild.mjs --production  minified build, as packaged
//   node esbuild.mjs --watch       rebuild on change
//   node esbuild.mjs --tests       bundle test/*.test.ts into dist-test/ for `node --test`
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  logLevel: "warning",
};

const options = tests
  ? {
      ...common,
      entryPoints: readdirSync("test")
        .filter((name) => name.endsWith(".test.ts"))
        .map((name) => `test/${name}`),
      outdir: "dist-test",
      sourcemap: "inline",
    }
  : {
      ...common,
      entryPoints: ["src/extension.ts"],
      outfile: "dist/extension.js",
      external: ["vscode"],
      minify: production,
      sourcemap: !production,
      sourcesContent: false,
    };

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
