"""Social: the company's accounts on Mastodon, Weibo, LinkedIn and X."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from limbo_plugin.world.clock import iso
from limbo_plugin.world.services.base import (
    Args,
    Body,
    Execution,
    Service,
    handles,
    not_found,
    validates,
)
from limbo_plugin.world.store import SEED_TIME, VersionedTable

if TYPE_CHECKING:
    from limbo_plugin.world.world import World

PLATFORMS = ("mastodon", "weibo", "linkedin", "x")
PREFIX = {"mastodon": "md", "weibo": "wb", "linkedin": "li", "x": "x"}
URL = {
    "mastodon": "https://mastodon.social/@acme/{id}",
    "weibo": "https://weibo.com/acme/{id}",
    "linkedin": "https://www.linkedin.com/feed/update/{id}",
    "x": "https://x.com/acme/status/{id}",
}


class SocialService(Service):
    name = "social"

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.posts = {platform: VersionedTable() for platform in PLATFORMS}

    def record_tables(self) -> list[VersionedTable]:
        return list(self.posts.values())

    def seed(self, records: dict[str, Any]) -> None:
        for post in records.get("posts", []):
            platform = post["platform"]
            data = {"url": URL[platform].format(id=post["id"]), **post}
            self.posts[platform].put(post["id"], data, SEED_TIME)
        unknown = set(records) - {"posts"}
        if unknown:
            raise ValueError(f"social seed has unknown collections: {sorted(unknown)}")

    def _publish(self, platform: str, args: Args, ex: Execution) -> Body:
        post_id = self.new_id(PREFIX[platform], ex)
        url = URL[platform].format(id=post_id)
        data = {"id": post_id, "platform": platform, "text": args["text"], "url": url,
                "created": iso(ex.t)}
        self.posts[platform].put(post_id, data, ex.t)
        self.commit(args, ex, [post_id])
        return {"id": post_id, "url": url, "platform": platform}

    @handles("mastodon_publish")
    def publish_mastodon(self, args: Args, ex: Execution) -> Body:
        return self._publish("mastodon", args, ex)

    @handles("weibo_publish")
    def publish_weibo(self, args: Args, ex: Execution) -> Body:
        return self._publish("weibo", args, ex)

    @handles("linkedin_publish")
    def publish_linkedin(self, args: Args, ex: Execution) -> Body:
        return self._publish("linkedin", args, ex)

    @handles("x_publish")
    def publish_x(self, args: Args, ex: Execution) -> Body:
        return self._publish("x", args, ex)

    @validates("social_delete_post")
    def check_delete_post(self, args: Args) -> None:
        if not self.posts[args["platform"]].ever_existed(args["post_id"]):
            raise not_found(f"{args['platform']} post", args["post_id"])

    @handles("social_delete_post")
    def delete_post(self, args: Args, ex: Execution) -> Body:
        self.check_delete_post(args)
        table = self.posts[args["platform"]]
        post_id = args["post_id"]
        if table.current(post_id) is not None:
            table.delete(post_id, ex.t)
            effect = self.commit(args, ex, [post_id], kind="update",
                                 targets=[post_id])
            self.world.ledger.mark_undone(post_id, ex.t, by=effect.seq)
        return {"id": post_id, "platform": args["platform"], "deleted": True}

    def _list(self, platform: str, ex: Execution) -> Body:
        at = self.view_time(ex)
        posts = [data for _, data, _ in self.posts[platform].visible(at)]
        posts.reverse()
        return {"platform": platform, "posts": posts[:50]}

    @handles("mastodon_list_posts")
    def list_mastodon(self, args: Args, ex: Execution) -> Body:
        return self._list("mastodon", ex)

    @handles("weibo_list_posts")
    def list_weibo(self, args: Args, ex: Execution) -> Body:
        return self._list("weibo", ex)

    @handles("linkedin_list_posts")
    def list_linkedin(self, args: Args, ex: Execution) -> Body:
        return self._list("linkedin", ex)


SERVICES = (SocialService,)
