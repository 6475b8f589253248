"""The mailbox simulator: addresses on ``settings.test_domain`` that synthesize an outcome.

``delivered@`` is delivered, ``bounced@`` bounces (and joins the suppression list),
``complained@`` is delivered and then complains (and joins the list); a ``+label``
after the kind is allowed (``bounced+signup@``). No provider ever sees these
addresses: they are taken out of the envelope of an email that also has real
recipients, and an email with only simulated recipients touches no provider at all.
``suppressed@`` never reaches delivery (the API drops it as suppressed); should it,
it is dropped here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mailbridge.mail.addresses import simulator_kind

# The events each kind produces after ``sent``, in order.
SIMULATED_EVENTS: dict[str, tuple[str, ...]] = {
    "delivered": ("delivered",),
    "bounced": ("bounced",),
    "complained": ("delivered", "complained"),
    "suppressed": (),
}
# The suppression reason an event adds for its recipient.
SUPPRESSING_EVENTS = {"bounced": "bounced", "complained": "complained"}


@dataclass(frozen=True)
class SimulatedRecipient:
    address: str
    kind: str

    @property
    def events(self) -> tuple[str, ...]:
        return SIMULATED_EVENTS[self.kind]


def split_recipients(
    recipients: Sequence[str], test_domain: str
) -> tuple[list[str], list[SimulatedRecipient]]:
    """(real recipients, simulated recipients), each in the given order."""
    real: list[str] = []
    simulated: list[SimulatedRecipient] = []
    for address in recipients:
        kind = simulator_kind(address, test_domain)
        if kind is None:
            real.append(address)
        else:
            simulated.append(SimulatedRecipient(address.lower(), kind))
    return real, simulated
