"""The six simulated services. Each module holds one service's semantics; its tools live in YAML."""

from limbo_plugin.world.services.billing import BillingService
from limbo_plugin.world.services.database import DatabaseService
from limbo_plugin.world.services.deploy import DeployService
from limbo_plugin.world.services.email import EmailService
from limbo_plugin.world.services.social import SocialService
from limbo_plugin.world.services.tickets import TicketsService

SERVICE_CLASSES = {
    cls.name: cls
    for cls in (BillingService, SocialService, TicketsService, EmailService, DatabaseService,
                DeployService)
}

__all__ = ["SERVICE_CLASSES"]
