// katex-render.js: render every formula of the book in one node process.
//
//   node katex-render.js KATEX_JS < formulas.json > rendered.json
//
// Reads a JSON array of [tex, display] pairs on stdin and writes a JSON array
// of HTML strings (KaTeX's HTML for the eye plus MathML for screen readers),
// in the same order.  KATEX_JS is the library's UMD bundle (Debian's
// libjs-katex: /usr/share/javascript/katex/katex.min.js).  A formula KaTeX
// cannot parse is reported with its text; any such error fails the run
// (exit 1), so no raw TeX reaches a page.
'use strict';
const katex = require(process.argv[2] || '/usr/share/javascript/katex/katex.min.js');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const items = JSON.parse(input);
  const out = [];
  let errors = 0;
  for (const [tex, display] of items) {
    try {
      out.push(katex.renderToString(tex, {
        displayMode: display, throwOnError: true, output: 'htmlAndMathml',
      }));
    } catch (e) {
      process.stderr.write('katex-render: error: ' + e.message + '\n    in: ' + tex + '\n');
      errors += 1;
      out.push('');
    }
  }
  if (errors > 0) process.exit(1);
  process.stdout.write(JSON.stringify(out));
});
