"""Operations declared once (:mod:`memdb.core.ops.catalog`): the doors are generated from them.

The agents' verbs are in :mod:`memdb.core.ops.catalog` (and ``remember`` in
:mod:`memdb.core.ops.remember`), the families' operations in :mod:`memdb.core.ops.families`;
:data:`DECLARED` is all of them. An :class:`Operation` names its parameters
(:class:`Param`: type, range, default, help), the scope it reads when no subject is named, its
result and its errors. The MCP tools, the memory
tool's JSON Schema, the HTTP request models, the CLI options and docs/operations.md read them,
and :meth:`Operation.check` is the one validation of a door's values.
"""

from ._operation import SCOPES, Operation
from ._param import REQUIRED, Param
from .catalog import OPERATIONS, operation
from .families import FAMILY_OPERATIONS
from .remember import REMEMBER_OPERATIONS

# The operations whose doors are generated from their declarations: the agents' verbs
# (catalog), the families' operations reached through more than one door (families) and
# remember (a turn's extraction, waited for or queued: remember).
DECLARED: tuple[Operation, ...] = OPERATIONS + REMEMBER_OPERATIONS + FAMILY_OPERATIONS

__all__ = ["Operation", "Param", "REQUIRED", "SCOPES", "OPERATIONS", "FAMILY_OPERATIONS",
           "REMEMBER_OPERATIONS", "DECLARED", "operation"]
