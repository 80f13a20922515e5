"""Operators: Detect Limbs, Plant Feet, and editing limbs by hand. Thin: they validate, call `core`, and report."""

from __future__ import annotations

import time

import bpy

from ..core import checks, live, setup
from ..core.errors import UserError
from ..properties import settings


def _armature_poll(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Select an armature (the animated character) and make it active")
        return False
    if obj.library is not None:
        cls.poll_message_set("This armature is linked from a library: make a library override to edit it")
        return False
    return True


class CONTACT_IK_OT_detect_limbs(bpy.types.Operator):
    """Find the legs and arms of the active armature from its bone names and hierarchy"""

    bl_idname = "contact_ik.detect_limbs"
    bl_label = "Detect Limbs"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import detect

        obj = context.active_object
        try:
            found, pelvis = setup.find_limbs(obj)
        except UserError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if not found:
            self.report({"ERROR"}, setup.no_limbs_message(obj))
            return {"CANCELLED"}
        setup.apply_detection(obj, found, pelvis)
        self.report({"INFO"}, "Found " + detect.describe(found).replace("\n", "; "))
        return {"FINISHED"}


class CONTACT_IK_OT_plant_feet(bpy.types.Operator):
    """Plant the feet of the active armature on the terrain (the selected mesh) and turn on live preview"""

    bl_idname = "contact_ik.plant_feet"
    bl_label = "Plant Feet"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        started = time.perf_counter()
        obj = context.active_object
        assert obj is not None  # poll
        s = settings(obj)
        if live.plays_baked(obj):
            self.report({"ERROR"}, f"{obj.name!r} plays its baked action {obj.animation_data.action.name!r}, which already "
                                   "holds the IK: click Back to Source Action to plant the source again")
            return {"CANCELLED"}
        scene = context.scene
        picked = [o for o in context.selected_objects if o.type == "MESH" and o is not obj]
        try:
            prepared = setup.prepare(obj, scene, picked[0] if picked else None, context.evaluated_depsgraph_get())
        except UserError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        ground = prepared.terrain
        for warning in prepared.warnings:
            self.report({"WARNING"}, warning)
        s.live_preview = True
        if obj.name not in live.caches.frames:  # built now (not after the click, as the switch does in the UI)
            live.precompute(obj, scene)
        results = live.refresh(scene)
        if obj.name not in results:
            self.report({"ERROR"}, f"Plant Feet failed on {obj.name!r}: see the system console")
            return {"CANCELLED"}
        if not checks.feet_over_terrain(obj, s, ground):
            self.report({"WARNING"}, f"No ground under the feet of {obj.name!r} at frame {scene.frame_current}: the "
                                     "terrain is not below them, so they keep their animated pose; move the terrain "
                                     "under the character (or the character over it)")
        limbs = [lb.name for lb in s.limbs if lb.enabled]
        took = (time.perf_counter() - started) * 1000.0
        terrain_name = s.terrain.name if s.terrain else s.terrain_collection.name
        scene = context.scene
        frames = list(range(scene.frame_start, scene.frame_end + 1))
        from ..core import measure

        worst, warnings = measure.summary([obj], scene, frames)
        for w in warnings:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, f"Planted {len(limbs)} limb(s) of {obj.name!r} ({', '.join(limbs)}) on {terrain_name!r}, "
                              f"frames {frames[0]}-{frames[-1]}, in {took:.0f} ms; live preview on"
                              + (f"; {worst}" if worst else "") + (f"; {len(warnings)} warning(s)" if warnings else ""))
        return {"FINISHED"}


class CONTACT_IK_OT_limb_add(bpy.types.Operator):
    """Add a limb by hand. In Pose Mode the active bone becomes its end (foot or hand) and its parents the chain"""

    bl_idname = "contact_ik.limb_add"
    bl_label = "Add Limb"
    bl_options = {"REGISTER", "UNDO"}

    kind: bpy.props.EnumProperty(  # type: ignore[valid-type]
        name="Kind", description="What the new limb does",
        items=(
            ("FOOT", "Foot", "Plant the end of this chain on the terrain"),
            ("HAND", "Hand", "Reach a target object or bone"),
            ("CHAIN", "Chain", "A generic chain that reaches a target"),
        ),
        default="FOOT",
    )
    chain_length: bpy.props.IntProperty(  # type: ignore[valid-type]
        name="Chain Bones", description="Bones in the chain above the end bone (2 = thigh and shin)", default=2, min=1, max=32
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _armature_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        active = context.active_pose_bone if context.mode == "POSE" else None
        try:
            limb = setup.add_limb(obj, self.kind, active.name if active is not None else "", self.chain_length)
        except UserError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        chain = " > ".join([b.bone for b in limb.bones] + [limb.end_bone]) if limb.end_bone else "pick its bones below"
        self.report({"INFO"}, f"Added {limb.name!r}: {chain}")
        return {"FINISHED"}


class CONTACT_IK_OT_limb_remove(bpy.types.Operator):
    """Remove the active limb from the list (the bones and their animation are not touched)"""

    bl_idname = "contact_ik.limb_remove"
    bl_label = "Remove Limb"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        s = settings(context.active_object)
        if not (0 <= s.active_limb < len(s.limbs)):
            cls.poll_message_set("No limb is selected in the list")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        s = settings(obj)
        name = s.limbs[s.active_limb].name
        live.restore_for_edit(obj)
        live.invalidate_frames()
        s.limbs.remove(s.active_limb)
        s.active_limb = max(0, min(s.active_limb, len(s.limbs) - 1))
        live.refresh(context.scene)
        self.report({"INFO"}, f"Removed limb {name!r}")
        return {"FINISHED"}


class CONTACT_IK_OT_limb_bone(bpy.types.Operator):
    """Add a bone slot to the active limb's chain, or remove its last one"""

    bl_idname = "contact_ik.limb_bone"
    bl_label = "Chain Bone"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.EnumProperty(  # type: ignore[valid-type]
        name="Action", description="Add a bone slot to the chain or remove its last one",
        items=(("ADD", "Add", "Add a bone slot at the tip"), ("REMOVE", "Remove", "Remove the last bone")),
        default="ADD",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        s = settings(context.active_object)
        if not (0 <= s.active_limb < len(s.limbs)):
            cls.poll_message_set("No limb is selected in the list")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        s = settings(obj)
        limb = s.limbs[s.active_limb]
        live.invalidate_frames()
        if self.action == "ADD":
            limb.bones.add()
        elif len(limb.bones) <= 1:
            self.report({"ERROR"}, "A limb needs at least one chain bone above its end bone")
            return {"CANCELLED"}
        else:
            live.restore_for_edit(obj)
            limb.bones.remove(len(limb.bones) - 1)
        setup.measure_limb(obj, limb)
        live.refresh(context.scene)
        return {"FINISHED"}


class CONTACT_IK_OT_bake(bpy.types.Operator):
    """Bake the planted feet and hands of the selected armatures to keyframes in a new action (the source
    action is kept, one click away). Esc cancels"""

    bl_idname = "contact_ik.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    use_scene_range: bpy.props.BoolProperty(  # type: ignore[valid-type]
        name="Scene Range", description="Bake the scene's frame range", default=True
    )
    frame_start: bpy.props.IntProperty(name="Start", description="First frame to bake", default=1)  # type: ignore[valid-type]
    frame_end: bpy.props.IntProperty(name="End", description="Last frame to bake", default=250)  # type: ignore[valid-type]

    _job: object = None
    _timer: object = None

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        from ..core import bake

        if bake.is_baked(bake.anim.action_of(context.active_object)):
            cls.poll_message_set("This armature already plays its baked action: switch back to the source to bake again")
            return False
        if not settings(context.active_object).limbs:
            cls.poll_message_set("No limbs yet: run Plant Feet or Detect Limbs first")
            return False
        return True

    def _make_job(self, context: bpy.types.Context):  # type: ignore[no-untyped-def]
        from ..core import bake

        objs = [o for o in context.selected_objects if o.type == "ARMATURE" and settings(o).limbs]
        if context.active_object not in objs:
            objs.insert(0, context.active_object)
        scene = context.scene
        start, end = (scene.frame_start, scene.frame_end) if self.use_scene_range else (self.frame_start, self.frame_end)
        cuts = [w for w in (setup.cut_warning(o, scene) for o in objs) if w]  # it sweeps frames: before the job
        job = bake.BakeJob(objs, start, end, scene)
        for warning in job.warnings + cuts:
            self.report({"WARNING"}, warning)
        return job

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            job = self._make_job(context)
        except UserError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return self._finish(job)

    def _finish(self, job) -> set[str]:  # type: ignore[no-untyped-def]
        reports = job.finish()
        took = reports[0].seconds if reports else 0.0
        names = ", ".join(f"{r.obj_name!r} -> {r.action_name!r}" for r in reports)
        from ..core import measure

        scene = bpy.context.scene
        objs = [bpy.data.objects[r.obj_name] for r in reports if r.obj_name in bpy.data.objects]
        frames = job.frames
        worst, warnings = measure.summary(objs, scene, frames) if frames else ("", [])
        for w in warnings:
            self.report({"WARNING"}, w)
        limbs = sum(len([lb for lb in settings(o).limbs if lb.enabled]) for o in objs)
        self.report({"INFO"}, f"Baked {limbs} limb(s) over {len(frames)} frames ({frames[0]}-{frames[-1]}): "
                              f"{names} in {took:.2f} s ({', '.join(sorted({r.read for r in reports}))})"
                              + (f"; {worst}" if worst else "")
                              + (f"; {len(warnings)} warning(s)" if warnings else ""))
        return {"FINISHED"}

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        try:
            job = self._make_job(context)
        except UserError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if len(job.frames) <= 50 or context.window is None:
            return self._finish(job)
        self._job = job
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        job = self._job
        wm = context.window_manager
        if event.type == "ESC":
            job.cancel()  # type: ignore[attr-defined]
            self._end(context)
            self.report({"WARNING"}, "Bake cancelled: nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}
        t0 = time.perf_counter()
        done = False
        while not done and time.perf_counter() - t0 < 0.1:
            done = job.step(5)  # type: ignore[attr-defined]
        wm.progress_update(int(100 * job.progress))  # type: ignore[attr-defined]
        context.workspace.status_text_set(f"Contact IK: baking {int(100 * job.progress)} % (Esc to cancel)")  # type: ignore[attr-defined]
        if not done:
            return {"RUNNING_MODAL"}
        self._end(context)
        return self._finish(job)

    def _end(self, context: bpy.types.Context) -> None:
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)  # type: ignore[arg-type]
        wm.progress_end()
        context.workspace.status_text_set(None)


class CONTACT_IK_OT_use_source_action(bpy.types.Operator):
    """Play the source action again instead of the baked one (live preview applies again); the bake is kept"""

    bl_idname = "contact_ik.use_source_action"
    bl_label = "Back to Source Action"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        from ..core import bake

        if bake.source_of(bake.anim.action_of(context.active_object)) is None:
            cls.poll_message_set("The armature does not play a Contact IK bake")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import bake

        obj = context.active_object
        source = bake.use_source(obj)
        live.invalidate_frames()
        if live.precompute(obj, context.scene) is None:
            live.refresh(context.scene)
        self.report({"INFO"}, f"{obj.name!r} plays {source.name!r} again")  # type: ignore[union-attr]
        return {"FINISHED"}


def _foot_poll(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    if not _armature_poll(cls, context):
        return False
    s = settings(context.active_object)
    if not (0 <= s.active_limb < len(s.limbs)) or s.limbs[s.active_limb].kind != "FOOT":
        cls.poll_message_set("Select a foot in the limb list")
        return False
    return True


class CONTACT_IK_OT_detect_contacts(bpy.types.Operator):
    """Find when each foot is down in the animation (sole near the floor and still), replacing the contacts"""

    bl_idname = "contact_ik.detect_contacts"
    bl_label = "Detect Contacts"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _armature_poll(cls, context):
            return False
        if not any(lb.kind == "FOOT" for lb in settings(context.active_object).limbs):
            cls.poll_message_set("No feet yet: run Detect Limbs or Plant Feet first")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import contacts

        obj = context.active_object
        error = checks.range_error(context.scene.frame_start, context.scene.frame_end)
        if error:
            self.report({"ERROR"}, error)
            return {"CANCELLED"}
        count = contacts.detect_contacts(obj, context.scene)
        cut = setup.cut_warning(obj, context.scene)
        if cut:
            self.report({"WARNING"}, cut)
        live.invalidate_frames()
        if obj.name in live.live_rigs and live.precompute(obj, context.scene) is None:
            live.refresh(context.scene)
        self.report({"INFO"}, f"Found {count} foot contact(s) in {obj.name!r}")
        return {"FINISHED"}


class CONTACT_IK_OT_contact_add(bpy.types.Operator):
    """Add a contact to the selected foot starting at the current frame (edit its frames in the list)"""

    bl_idname = "contact_ik.contact_add"
    bl_label = "Add Contact"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _foot_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import contacts

        obj = context.active_object
        s = settings(obj)
        limb = s.limbs[s.active_limb]
        f = context.scene.frame_current
        length = max(1, round(0.3 * contacts.fps_of(context.scene)))
        later = [c.start for c in limb.contacts if c.start > f]
        c = limb.contacts.add()
        c.start, c.end = f, min([f + length] + [x - 1 for x in later])
        limb.active_contact = len(limb.contacts) - 1
        contacts.relock(obj, context.scene, s.active_limb)
        live.invalidate_frames()
        self.report({"INFO"}, f"Contact {c.start}-{c.end} added to {limb.name!r}")
        return {"FINISHED"}


class CONTACT_IK_OT_contact_remove(bpy.types.Operator):
    """Remove the selected contact of the selected foot"""

    bl_idname = "contact_ik.contact_remove"
    bl_label = "Remove Contact"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not _foot_poll(cls, context):
            return False
        s = settings(context.active_object)
        limb = s.limbs[s.active_limb]
        if not (0 <= limb.active_contact < len(limb.contacts)):
            cls.poll_message_set("No contact selected")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        s = settings(context.active_object)
        limb = s.limbs[s.active_limb]
        limb.contacts.remove(limb.active_contact)
        limb.active_contact = max(0, min(limb.active_contact, len(limb.contacts) - 1))
        live.invalidate_frames()
        return {"FINISHED"}


class CONTACT_IK_OT_contact_relock(bpy.types.Operator):
    """Recompute where the selected foot stays during each contact (after editing contact frames)"""

    bl_idname = "contact_ik.contact_relock"
    bl_label = "Update Lock Points"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _foot_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        from ..core import contacts

        obj = context.active_object
        contacts.relock(obj, context.scene, settings(obj).active_limb)
        live.invalidate_frames()
        return {"FINISHED"}


classes = (
    CONTACT_IK_OT_detect_limbs,
    CONTACT_IK_OT_plant_feet,
    CONTACT_IK_OT_limb_add,
    CONTACT_IK_OT_limb_remove,
    CONTACT_IK_OT_limb_bone,
    CONTACT_IK_OT_bake,
    CONTACT_IK_OT_use_source_action,
    CONTACT_IK_OT_detect_contacts,
    CONTACT_IK_OT_contact_add,
    CONTACT_IK_OT_contact_remove,
    CONTACT_IK_OT_contact_relock,
)
register, unregister = bpy.utils.register_classes_factory(classes)
