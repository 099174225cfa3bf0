"""`audit.format: ocsf` (docs/operations.md "OCSF audit output"): every line the proxy writes
is an OCSF 1.1.0 event, validated here against the attributes, types and enum values of the
classes Airlock writes, as listed in ocsf/ocsf-1.1.0-subset.json (the spec subset, with the
OCSF field names): HTTP Activity (4002) for a plain request allowed and one denied, Network
Activity (4001) for a CONNECT tunnel, API Activity (6003) for an operator's action."""

import json
import os
import unittest

from harness import env
from harness.base import ProxyTestCase, marker
from harness.ops_admin import admin_call
from harness.proxy import make_policy, origin_rule, tunnel_rule

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ocsf",
                      "ocsf-1.1.0-subset.json")


def check_type(schema, value, kind, where, errors):
    """Appends to `errors` what in `value` breaks `kind` (a type or an object name)."""
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "string":
        ok = isinstance(value, str)
    elif kind == "string[]":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif kind == "object":
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, dict)
        if ok:
            check_object(schema, value, schema["objects"][kind], where, errors)
    if not ok:
        errors.append("%s: %r is not %s" % (where, value, kind))


def check_object(schema, value, spec, where, errors):
    for key in spec.get("required", []):
        if key not in value:
            errors.append("%s: required %s missing" % (where, key))
    for key, v in value.items():
        if key not in spec["attributes"]:
            errors.append("%s: %s is not an attribute of this object" % (where, key))
            continue
        check_type(schema, v, spec["attributes"][key], where + "." + key, errors)
    if "at_least_one" in spec and not any(k in value for k in spec["at_least_one"]):
        errors.append("%s: none of %s" % (where, spec["at_least_one"]))


def validate(schema, event):
    """The list of ways `event` breaks the subset (empty when it conforms)."""
    errors = []
    cls = schema["classes"].get(str(event.get("class_uid")))
    if cls is None:
        return ["class_uid %r is not one Airlock writes" % event.get("class_uid")]
    attributes = dict(schema["base_event"]["attributes"])
    attributes.update(cls["attributes"])
    if "security_control" in cls["profiles"]:
        attributes.update(schema["security_control_profile"]["attributes"])
    spec = {"required": schema["base_event"]["required"] + cls.get("required", []),
            "attributes": attributes}
    if "at_least_one" in cls:
        spec["at_least_one"] = cls["at_least_one"]
    check_object(schema, event, spec, "event", errors)
    if errors:
        return errors
    if event["category_uid"] != cls["category_uid"]:
        errors.append("category_uid %r, not %r" % (event["category_uid"], cls["category_uid"]))
    if event["activity_id"] not in cls["activity_id"]:
        errors.append("activity_id %r not in the class's enum" % event["activity_id"])
    if event["type_uid"] != event["class_uid"] * 100 + event["activity_id"]:
        errors.append("type_uid %r is not class_uid * 100 + activity_id" % event["type_uid"])
    for key, values in schema["enums"].items():
        if key in event and event[key] not in values:
            errors.append("%s %r not in its enum" % (key, event[key]))
    if event["metadata"]["version"] != schema["version"]:
        errors.append("metadata.version %r" % event["metadata"]["version"])
    if sorted(event["metadata"].get("profiles", [])) != sorted(cls["profiles"]):
        errors.append("metadata.profiles %r" % event["metadata"].get("profiles"))
    return errors


class OcsfAuditTest(ProxyTestCase):
    @classmethod
    def policy(cls):
        p = make_policy([origin_rule(cls.origin.port, name="web"),
                         tunnel_rule(cls.origin.port, name="tunnel", hosts=["tls.test"])])
        p["listen"]["admin"] = "127.0.0.1:0"
        p["audit"] = {"format": "ocsf"}
        return p

    def test_every_event_conforms(self):
        with open(SCHEMA) as f:
            schema = json.load(f)
        m = marker()
        self.assertEqual(self.curl(self.url("/echo/ok-%s" % m)).status, 200)
        self.assertEqual(self.curl(self.url("/echo/no-%s" % m, host="other.test")).status, 403)
        c = self.raw()
        authority = "tls.test:%d" % self.origin.port
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
        self.assertEqual(c.read_response(tunnel=True).status, 200)
        c.close()
        self.assertEqual(admin_call(self.proxy.admin, "POST", "/agents/default/stop").status, 200)

        def events(**match):
            return self.proxy.wait_audit(timeout=env.t(10), **match)
        ok = events(class_uid=4002, http_request=lambda r: r and r["url"]["path"].endswith(
            "ok-%s" % m))
        self.assertIsNotNone(ok, self.proxy.audit()[-5:])
        self.assertEqual((ok["activity_id"], ok["type_uid"], ok["action"], ok["status_id"]),
                         (3, 400203, "Allowed", 1))
        self.assertEqual(ok["http_response"]["code"], 200)
        self.assertEqual(ok["unmapped"]["rule"], "web")
        no = events(class_uid=4002, http_request=lambda r: r and r["url"]["path"].endswith(
            "no-%s" % m))
        self.assertIsNotNone(no)
        self.assertEqual((no["action_id"], no["disposition"], no["status_code"]),
                         (2, "Blocked", "host_denied"))
        tunnel = events(class_uid=4001)
        self.assertIsNotNone(tunnel, self.proxy.audit()[-5:])
        self.assertEqual(tunnel["dst_endpoint"]["hostname"], "tls.test")
        op = events(class_uid=6003, api={"operation": "stop"})
        self.assertIsNotNone(op)
        self.assertEqual((op["activity_id"], op["actor"]["user"]["name"]), (3, "local"))
        records = self.proxy.audit()
        self.assertGreaterEqual(len(records), 4)
        for rec in records:
            with self.subTest(event=rec):
                self.assertEqual(validate(schema, rec), [])

    def test_the_validator_catches_what_it_is_for(self):
        with open(SCHEMA) as f:
            schema = json.load(f)
        good = {"activity_id": 3, "category_uid": 4, "class_uid": 4002, "type_uid": 400203,
                "severity_id": 1, "time": 1, "metadata": {"version": "1.1.0", "product": {
                    "vendor_name": "Airlock"}, "profiles": ["security_control"]},
                "http_response": {"code": 200}}
        self.assertEqual(validate(schema, good), [])
        for broken, why in (({"type_uid": 400204}, "type_uid"),
                            ({"activity_id": 42, "type_uid": 400242}, "activity_id"),
                            ({"severity_id": 7}, "severity_id"),
                            ({"time": "now"}, "event.time"),
                            ({"http_response": None}, "http_response"),
                            ({"metadata": {"version": "1.1.0"}}, "required product"),
                            ({"bogus": 1}, "bogus")):
            event = dict(good, **broken)
            with self.subTest(broken=broken):
                self.assertTrue([e for e in validate(schema, event) if why in e],
                                validate(schema, event))
        event = dict(good)
        del event["time"]
        self.assertIn("event: required time missing", validate(schema, event))


if __name__ == "__main__":
    unittest.main()
