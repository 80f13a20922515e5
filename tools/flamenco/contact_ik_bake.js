// SPDX-License-Identifier: GPL-3.0-or-later
// Flamenco job type: Contact IK bake, one task per clip and terrain.
//
// Install: copy this file into the `scripts/` folder beside the Flamenco Manager's executable and
// restart the Manager. Workers need Blender (the Manager's `{blender}` variable) with the Contact IK
// extension installed, and the clips, terrains and output folder on storage they share.
//
// Each task runs exactly the command a local batch or a Dask worker runs for one clip:
//   blender --background --command contact_ik bake CLIP --terrain TERRAIN --output OUT.blend --report OUT.json
// Flamenco retries a task whose worker is lost, as Dask does. Written against Flamenco 3's job compiler
// API (JOB_TYPE, compileJob, author.Task, author.Command "exec"); not run here: there is no Manager on the
// machine this project is developed on.

const JOB_TYPE = {
  label: "Contact IK Bake",
  description: "Plant the feet of motion clips on terrains and bake them to keys (Contact IK)",
  settings: [
    { key: "clips", type: "string", required: true,
      description: "Clips (.bvh, .fbx, .blend), one path per line or separated by ';'" },
    { key: "terrains", type: "string", required: false, default: "",
      description: "Terrain meshes (.obj, .ply, .stl) or object names, ';'-separated; empty: flat ground at each clip's floor" },
    { key: "output_dir", type: "string", subtype: "dir_path", required: true,
      description: "Folder for the baked .blend files and reports (shared by all workers)" },
    { key: "export", type: "string", required: false, default: "", choices: ["", ".bvh", ".fbx"],
      description: "Also export the cleaned motion" },
    { key: "extra_args", type: "string", required: false, default: "",
      description: "More contact_ik bake arguments, e.g. --up-axis Z --frame-end 500" },
  ],
};

function splitList(text) {
  return (text || "").split(/[;\n]/).map((s) => s.trim()).filter((s) => s.length > 0);
}

function stem(p) {
  const base = path.basename(p);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.substring(0, dot) : base;
}

function compileJob(job) {
  const settings = job.settings;
  const clips = splitList(settings.clips);
  const terrains = splitList(settings.terrains);
  const terrainList = terrains.length > 0 ? terrains : [null];
  const extra = (settings.extra_args || "").split(/\s+/).filter((s) => s.length > 0);
  if (clips.length === 0) {
    throw "no clips given";
  }
  for (const clip of clips) {
    for (const terrain of terrainList) {
      const key = terrainList.length > 1 ? `${stem(clip)}.${stem(terrain)}` : stem(clip);
      const out = path.join(settings.output_dir, `${key}.contact_ik`);
      const args = ["--background", "--command", "contact_ik", "bake", clip,
                    "--output", `${out}.blend`, "--report", `${out}.json`, "--overwrite"];
      if (terrain) {
        args.push("--terrain", terrain);
      }
      if (settings.export) {
        args.push("--export", `${out}${settings.export}`);
      }
      const task = author.Task(`bake-${key}`, "misc");
      task.addCommand(author.Command("exec", { exe: "{blender}", args: args.concat(extra) }));
      job.addTask(task);
    }
  }
}
