"""How a job reaches remote shards (s3://, http://, https://), gathered in
the trainer's own process.

stokerd never uses credentials of its own: the loader sends the trainer's
with CreateJob (over the Unix socket), the daemon fetches the job's shards
with them while the job is created, then drops them. They are never logged
and never shown by GetJob, ListJobs, stats or metrics.

Where they come from, first found first (as the AWS tools look):
  * the DataLoader's `remote=` dict (keys as in RemoteAccess below, and
    "profile");
  * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION
    (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL);
  * the profile (AWS_PROFILE, else "default") of ~/.aws/credentials and
    ~/.aws/config (or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE).
path_style defaults to True when an endpoint is given (S3-compatible stores
mostly want it), else False.
"""

import configparser
import os
from typing import Any, Dict, List, Optional, Sequence

from stoker import errors

_SCHEMES = ("s3://", "http://", "https://")
_KEYS = ("endpoint_url", "region", "path_style", "access_key_id",
         "secret_access_key", "session_token", "profile")


def is_remote(shard: Any) -> bool:
    """Whether a shard name is a remote URL."""
    return isinstance(shard, str) and shard.lower().startswith(_SCHEMES)


def any_remote(shards: Any) -> bool:
    """Whether any shard `shards` stands for is remote (see shard_names)."""
    return shards is not None and any(is_remote(s) for s in shard_names(shards))


def shard_names(shards: Any) -> List[str]:
    """The shard names (paths, URLs, brace patterns) `shards` stands for: a
    name, a list of names, or a shard list file (a local path ending in
    .txt: one name per line, blank lines and lines starting with # skipped,
    relative paths taken from the file's directory)."""
    if isinstance(shards, (str, os.PathLike)):
        name = os.fspath(shards)
        if is_remote(name) or not name.endswith(".txt"):
            return [name]
        try:
            with open(name) as f:
                lines = [line.strip() for line in f]
        except OSError as error:
            raise errors.InvalidArgument(f"shard list {name}: {error}") from None
        base = os.path.dirname(os.path.abspath(name))
        names = [line if is_remote(line) else os.path.join(base, line)
                 for line in lines if line and not line.startswith("#")]
        if not names:
            raise errors.InvalidArgument(f"shard list {name} names no shard")
        return names
    return [os.fspath(s) for s in shards]


def any_s3(shards: Any) -> bool:
    """Whether any shard `shards` stands for is an s3:// URL."""
    return shards is not None and any(
        isinstance(s, str) and s.lower().startswith("s3://")
        for s in shard_names(shards))


def _read_profile(path_env: str, default: str, section: str) -> Dict[str, str]:
    path = os.environ.get(path_env) or os.path.expanduser(default)
    parser = configparser.RawConfigParser()
    try:
        parser.read(path)
    except configparser.Error as error:
        raise errors.InvalidArgument(f"{path}: {error}") from None
    return dict(parser.items(section)) if parser.has_section(section) else {}


def access(options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The stoker.v1.RemoteAccess dict a job over remote shards is sent."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_KEYS))
    if unknown:
        raise errors.InvalidArgument(
            f"remote: unknown keys {unknown}; known: {list(_KEYS)}")
    env = os.environ
    profile = options.get("profile") or env.get("AWS_PROFILE") or "default"
    credentials = _read_profile("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials",
                                profile)
    config = _read_profile("AWS_CONFIG_FILE", "~/.aws/config",
                           profile if profile == "default" else f"profile {profile}")

    def pick(key: str, env_names: Sequence[str], file_key: str,
             files: Sequence[Dict[str, str]]) -> str:
        if options.get(key):
            return str(options[key])
        for name in env_names:
            if env.get(name):
                return env[name]
        for source in files:
            if source.get(file_key):
                return source[file_key]
        return ""

    both = (credentials, config)
    found: Dict[str, Any] = {
        "endpoint_url": pick("endpoint_url", ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
                             "endpoint_url", (config,)),
        "region": pick("region", ("AWS_REGION", "AWS_DEFAULT_REGION"), "region",
                       (config,)),
        "access_key_id": pick("access_key_id", ("AWS_ACCESS_KEY_ID",),
                              "aws_access_key_id", both),
        "secret_access_key": pick("secret_access_key", ("AWS_SECRET_ACCESS_KEY",),
                                  "aws_secret_access_key", both),
        "session_token": pick("session_token", ("AWS_SESSION_TOKEN",),
                              "aws_session_token", both),
    }
    path_style = options.get("path_style")
    found["path_style"] = (bool(found["endpoint_url"]) if path_style is None
                           else bool(path_style))
    return {key: value for key, value in found.items() if value}


def job_access(shards: Optional[Sequence[str]],
               remote: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The access a DataLoader sends with jobs over these shard names (the
    spec's, a shard list file already read): None for local shards, {} for
    http(s) ones (fetched unsigned), access(remote) for s3:// ones."""
    if not any_remote(shards):
        if remote is not None:
            raise errors.InvalidArgument(
                "remote applies to s3://, http:// or https:// shards only")
        return None
    if not any_s3(shards):
        return {}  # http(s) shards are fetched unsigned: no credentials sent
    return access(remote)
