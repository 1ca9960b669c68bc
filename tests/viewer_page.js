// Runs the script of the viewer page named by argv[2] (socialjax.viz.Viewer.save) against
// a minimal stand-in for the DOM, so that no browser is needed: clicks forward twice,
// drags the slider to frame 5, steps back, plays to the end, then plays once more for
// one tick; then the keys: right, left, space (play) and one tick, space (pause), right
// typed into the fps box and space on a focused button (both left to them), End, Home.
// Prints a JSON list of what the page shows after each of these: the frame index, the
// step line, the "episode ended" line, the table's head and rows, the play button's
// label, each row's colour key, the game-level values, the timeline's cursor and
// whether the last key was taken by the viewer.
const fs = require("fs");

const page = fs.readFileSync(process.argv[2], "utf8");
const id = page.match(/<div class="socialjax-viewer" id="([^"]+)" tabindex="0"/)[1];  // focusable: its keys
const data = page.match(/<script type="application\/json" class="sjv-data">([\s\S]*?)<\/script>/)[1];
const script = page.match(/<script>([\s\S]*?)<\/script>/)[1];

function element() {
  return {
    textContent: "", className: "", value: "", src: "", children: [], attributes: {}, style: {
      setProperty(name, value) { this[name] = value; },
    },
    appendChild(child) { this.children.push(child); return child; },
    insertRow() { const row = this.appendChild(element()); row.insertCell = () => row.appendChild(element()); return row; },
    setAttribute(name, value) { this.attributes[name] = value; },
  };
}
const parts = {};  // the elements a viewer looks up by class, "sjv-NAME"
const listeners = {};
const root = {
  querySelector: (selector) => (parts[selector.slice(5)] ||= element()),
  addEventListener: (type, f) => { listeners[type] = f; },
  focus: () => {},
};
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
let taken = null;  // whether the viewer took the last key (preventDefault)
function look() {
  shown.push({
    frame: frames.length ? frames.indexOf(parts.frame.src.replace("data:image/png;base64,", "")) : null,
    step: parts.step.textContent,
    ended: parts.ended.textContent,
    head: parts.head.children.map((c) => c.textContent),
    rows: parts.rows.children.map((r) => r.children.map((c) => c.textContent)),
    play: parts.play.textContent,
    swatches: parts.rows.children.map((r) => [r.children[0].className, r.children[0].style["--c"] || null]),
    values: parts.values ? parts.values.children.map((r) => r.children.map((c) => c.textContent)) : [],
    cursor: parts.cursor ? parts.cursor.attributes.x1 : null,
    taken,
  });
}
function key(name, tagName = "DIV", type = "") {
  taken = false;
  listeners.keydown({ key: name, target: { tagName, type }, preventDefault() { taken = true; } });
}
look();
parts.forward.onclick(); parts.forward.onclick(); look();
parts.slider.value = "5"; parts.slider.oninput(); look();
parts.back.onclick(); look();
parts.play.onclick(); look();
for (let ticks = 0; pending.length && ticks < 1000; ticks++) pending.shift()();
look();
parts.play.onclick(); pending.shift()(); look();
key("ArrowRight"); look();
key("ArrowLeft"); look();
key(" "); pending.shift()(); look();
key(" "); look();
key("ArrowRight", "INPUT", "number"); look();
key(" ", "BUTTON"); look();
key("End"); look();
key("Home"); look();
console.log(JSON.stringify(shown));
