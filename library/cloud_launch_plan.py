#!/usr/bin/python
"""Ansible module: refuse bad cloud launch inputs, or return the run's launch plan (read-only)."""

from __future__ import annotations

import datetime as dt

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.cloud_plan import PREFIX, check_inputs, launch_plan

DOCUMENTATION = r"""
---
module: cloud_launch_plan
short_description: Check the kindling_cloud_* inputs and the credentials, then plan the run
description:
  - Runs on the controller before anything is launched. Checks every C(kindling_cloud_*)
    input against the provider's data file (data/cloud_aws.yml, passed as I(catalogue)), for
    a known instance type, a count within the cap, a price above zero, the key pair's
    name, the controller's address; then that AWS credentials can be found (the
    environment, a profile or the shared files), without ever returning them.
  - Fails with one line per problem, naming the variable, its value and the fix.
  - Returns the plan (module_utils/cloud_plan.py) the launch tasks follow.
  - Reads only; supports check mode.
version_added: "0.5.0"
author:
  - Kindling maintainers
options:
  values:
    description: The kindling_cloud_* inputs, without the prefix.
    type: dict
    required: true
  catalogue:
    description: The provider's data file, as include_vars loads it.
    type: dict
    required: true
  check:
    description:
      - C(inputs) checks the inputs and returns the plan.
      - C(credentials) only looks for AWS credentials (never returned) and fails when
        none are found; run it with C(no_log).
    type: str
    choices: [inputs, credentials]
    default: inputs
  now:
    description: The time the expiry is counted from (YYYY-MM-DDTHH:MM:SSZ); empty is now.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Read-only.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Refuse bad inputs before anything is launched
  cloud_launch_plan:
    values: {instance_type: g5.xlarge, count: 2, capacity: spot, owner: ml-team}
    catalogue: "{{ kindling_cloud_catalogue }}"
"""

RETURN = r"""
plan:
  description: The run's launch plan (AMI filter, tags, spot options, SSH rule, group).
  returned: success
  type: dict
credential_source:
  description: >-
    Where the credentials were found (env, shared-credentials-file, ...), never the
    credentials.
  returned: when check is credentials
  type: str
"""


def credential_source(profile: str):
    """Where botocore finds credentials, or the problem; the credentials stay here."""
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        return (
            None,
            "boto3 and botocore are not installed on the controller: "
            "pip install -r requirements.txt",
        )
    try:
        session = botocore.session.Session(profile=profile or None)
        creds = session.get_credentials()
    except botocore.exceptions.ProfileNotFound:
        return None, (
            f"{PREFIX}aws_profile is {profile!r}: no such profile in ~/.aws/config or "
            "~/.aws/credentials; name one that exists, or leave it empty"
        )
    except botocore.exceptions.PartialCredentialsError as err:
        return None, (
            f"AWS credentials are incomplete ({err.kwargs.get('cred_var', 'a part')} is missing): "
            "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    except botocore.exceptions.BotoCoreError as err:
        return None, f"AWS credentials could not be read: {type(err).__name__}"
    if creds is None:
        return None, (
            "no AWS credentials found: export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN for temporary ones), or set AWS_PROFILE or "
            f"{PREFIX}aws_profile "
            "to a profile in ~/.aws/config; Kindling never takes them as variables"
        )
    return getattr(creds, "method", "unknown"), None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "values": {"type": "dict", "required": True},
            "catalogue": {"type": "dict", "required": True},
            "check": {"type": "str", "choices": ["inputs", "credentials"], "default": "inputs"},
            "now": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    values = module.params["values"]
    if module.params["check"] == "credentials":
        source, problem = credential_source(values.get("aws_profile") or "")
        if problem:
            module.fail_json(msg="Refusing to launch anything: " + problem, problems=[problem])
        module.exit_json(changed=False, credential_source=source)
    problems = check_inputs(values, module.params["catalogue"])
    if problems:
        module.fail_json(
            msg="Refusing to launch anything: " + "; ".join(problems), problems=problems
        )
    if module.params["now"]:
        now = dt.datetime.strptime(module.params["now"], "%Y-%m-%dT%H:%M:%SZ")
        now = now.replace(tzinfo=dt.timezone.utc)
    else:
        now = dt.datetime.now(dt.timezone.utc)
    module.exit_json(changed=False, plan=launch_plan(values, module.params["catalogue"], now))


if __name__ == "__main__":
    main()
