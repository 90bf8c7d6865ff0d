"""Policy and approval: which calls run, which ask a person first, and which are refused.

See `toolhall.policy._rules` for exactly how `tool(pattern)` rules match a call's subjects.
"""

from __future__ import annotations

from ._approval import Approval as Approval
from ._approval import ApprovalMemory as ApprovalMemory
from ._approval import ApprovalRequest as ApprovalRequest
from ._approval import Approver as Approver
from ._approval import QueueApprover as QueueApprover
from ._approval import coerce_answer as coerce_answer
from ._policy import Decision as Decision
from ._policy import Policy as Policy
from ._policy import PolicyAction as PolicyAction
from ._rules import Rule as Rule
from ._rules import parse_rule as parse_rule

__all__ = [
    "Approval",
    "ApprovalMemory",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "Policy",
    "PolicyAction",
    "QueueApprover",
    "Rule",
    "coerce_answer",
    "parse_rule",
]
