// The scenario editor's libraries, bundled once by `make ui-vendor` (esbuild) into
// api/ui/assets/vendor/editor.min.js: CodeMirror 5 with its YAML mode, lint and hint addons
// (the editor, its inline errors and its completions), and eemeli's `yaml` (a parser that
// keeps each node's source range, so an API error's JSON pointer lands on its line).
import CodeMirror from "codemirror";
import "codemirror/mode/yaml/yaml.js";
import "codemirror/addon/lint/lint.js";
import "codemirror/addon/hint/show-hint.js";
import "codemirror/addon/edit/matchbrackets.js";
import * as YAML from "yaml";

window.CodeMirror = CodeMirror;
window.YAML = YAML;
