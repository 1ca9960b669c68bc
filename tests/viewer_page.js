// Runs the script of the viewer page named by argv[2] (socialjax.viz.Viewer.save) against
// a minimal stand-in for the DOM, so that no browser is needed: clicks forward twice,
// drags the slider to frame 5, steps back, plays to the end, then plays once more for
// one tick. Prints a JSON list of what the page shows after each of these: the frame
// index, the step line, the "episode ended" line, the table's head and rows, the play
// button's label.
const fs = require("fs");

const page = fs.readFileSync(process.argv[2], "utf8");
const id = page.match(/<div class="socialjax-viewer" id="([^"]+)"/)[1];
const data = page.match(/<script type="application\/json" class="sjv-data">([\s\S]*?)<\/script>/)[1];
const script = page.match(/<script>([\s\S]*?)<\/script>/)[1];

function element() {
  return {
    textContent: "", className: "", value: "", src: "", children: [],
    appendChild(child) { this.children.push(child); return child; },
    insertRow() { const row = this.appendChild(element()); row.insertCell = () => row.appendChild(element()); return row; },
  };
}
const parts = {};  // the elements a viewer looks up by class, "sjv-NAME"
const root = { querySelector: (selector) => (parts[selector.slice(5)] ||= element()) };
root.querySelector(".sjv-data").textContent = data;
root.querySelector(".sjv-fps").value = "10";
global.document = {
  getElementById: (name) => { if (name !== id) throw new Error("unknown id " + name); return root; },
  createElement: element,
};
let pending = [];
global.setTimeout = (f) => { pending.push(f); return pending.length; };
global.clearTimeout = () => { pending = []; };
eval(script);

const frames = JSON.parse(data).frames;
const shown = [];
function look() {
  shown.push({
    frame: frames.indexOf(parts.frame.src.replace("data:image/png;base64,", "")),
    step: parts.step.textContent,
    ended: parts.ended.textContent,
    head: parts.head.children.map((c) => c.textContent),
    rows: parts.rows.children.map((r) => r.children.map((c) => c.textContent)),
    play: parts.play.textContent,
  });
}
look();
parts.forward.onclick(); parts.forward.onclick(); look();
parts.slider.value = "5"; parts.slider.oninput(); look();
parts.back.onclick(); look();
parts.play.onclick(); look();
for (let ticks = 0; pending.length && ticks < 1000; ticks++) pending.shift()();
look();
parts.play.onclick(); pending.shift()(); look();
console.log(JSON.stringify(shown));
