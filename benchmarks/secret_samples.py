"""Secrets in their published formats, and ordinary text that looks a little like them.

No real secret is kept here: each token is made from its format (prefix, alphabet, length)
with random characters from a seeded generator, as the providers' own documentation and
secret scanners describe them. `positives` are what graphmem must redact, each with the kind
its marker names; `near_misses` are what it must leave alone: hashes, UUIDs, images, words
that follow a key-like name, prefixes in prose.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Iterator

__all__ = ["near_misses", "positives"]

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "_-"
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits


def _pick(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _jwt(rng: random.Random) -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    header = part(b'{"alg":"HS256","typ":"JWT"}')
    subject, issued = rng.randint(1000, 99999), rng.randint(10**9, 2 * 10**9)
    payload = part(f'{{"sub":"{subject}","name":"user","iat":{issued}}}'.encode())
    return f"{header}.{payload}.{_pick(rng, _URLSAFE, 43)}"


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(_pick(rng, _ALNUM + "+/", 64) for _ in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def positives(seed: int = 7) -> Iterator[tuple[str, str]]:
    """(kind, text) pairs: each text holds one secret of that kind, in a sentence an agent might write."""
    rng = random.Random(seed)
    for _ in range(3):  # three of each, with different random characters
        yield "GitHub token", f"CI pushes with ghp_{_pick(rng, _ALNUM, 36)}"
        yield "GitHub token", f"fine-grained github_pat_{_pick(rng, _ALNUM, 22)}_{_pick(rng, _ALNUM, 59)} for the bot"
        yield "GitHub token", f"the app's installation token is ghs_{_pick(rng, _ALNUM, 36)}"
        yield "GitLab token", f"GITLAB_TOKEN=glpat-{_pick(rng, _URLSAFE, 20)}"
        team, bot = rng.randint(10**10, 10**11), rng.randint(10**10, 10**11)
        yield "Slack token", f"bot token xoxb-{team}-{bot}-{_pick(rng, _ALNUM, 24)}"
        yield (
            "Slack webhook",
            (
                f"alerts go to https://hooks.slack.com/services/T{_pick(rng, _UPPER, 8)}"
                f"/B{_pick(rng, _UPPER, 8)}/{_pick(rng, _ALNUM, 24)}"
            ),
        )
        yield "AWS access key", f"access key id AKIA{_pick(rng, _UPPER, 16)}"
        yield "secret value", f"aws_secret_access_key = {_pick(rng, _ALNUM + '/+', 40)}"
        yield "Google API key", f"maps key AIza{_pick(rng, _URLSAFE, 35)}"
        yield "OpenAI key", f"OPENAI_API_KEY=sk-proj-{_pick(rng, _URLSAFE, 74)}T3BlbkFJ{_pick(rng, _URLSAFE, 74)}"
        yield "OpenAI key", f"old key sk-{_pick(rng, _ALNUM, 48)}"
        yield "Anthropic key", f"ANTHROPIC_API_KEY: sk-ant-api03-{_pick(rng, _URLSAFE, 93)}AA"
        yield "Stripe key", f"stripe secret sk_live_{_pick(rng, _ALNUM, 99)}"
        yield "Stripe key", f"restricted key rk_test_{_pick(rng, _ALNUM, 24)}"
        yield "Stripe webhook secret", f"webhook signing secret whsec_{_pick(rng, _ALNUM, 32)}"
        yield "SendGrid key", f"mail via SG.{_pick(rng, _URLSAFE, 22)}.{_pick(rng, _URLSAFE, 43)}"
        yield "npm token", f"//registry.npmjs.org/:_authToken=npm_{_pick(rng, _ALNUM, 36)}"
        yield "PyPI token", f"twine uses pypi-AgEIcHlwaS5vcmc{_pick(rng, _URLSAFE, 70)}"
        yield "Hugging Face token", f"HF token hf_{_pick(rng, _ALNUM, 34)}"
        yield (
            "Discord token",
            (f"bot logs in with M{_pick(rng, _URLSAFE, 23)}.{_pick(rng, _URLSAFE, 6)}.{_pick(rng, _URLSAFE, 27)}"),
        )
        yield "Telegram bot token", f"telegram {rng.randint(10**8, 10**9)}:AA{_pick(rng, _URLSAFE, 33)}"
        yield "DigitalOcean token", f"doctl auth with dop_v1_{_pick(rng, _HEX, 64)}"
        yield "Shopify token", f"admin token shpat_{_pick(rng, _HEX, 32)}"
        yield "Databricks token", f"workspace token dapi{_pick(rng, _HEX, 32)}"
        yield "Linear key", f"linear lin_api_{_pick(rng, _ALNUM, 40)}"
        yield "Mailgun key", f"mailgun key-{_pick(rng, _HEX, 32)}"
        yield "Twilio key", f"twilio api key SK{_pick(rng, _HEX, 32)}"
        yield "private key", _pem(rng, "RSA PRIVATE KEY")
        yield "private key", _pem(rng, "OPENSSH PRIVATE KEY")
        yield "private key", _pem(rng, "PRIVATE KEY")
        yield "private key", f"deploy key starts -----BEGIN EC PRIVATE KEY-----\n{_pick(rng, _ALNUM + '+/', 64)}"
        yield "JWT", f"session cookie {_jwt(rng)}"
        yield (
            "bearer token",
            f"curl -H 'Authorization: Bearer {_pick(rng, _URLSAFE + '.', 40)}' https://api.example.com",
        )
        user, word = _pick(rng, string.ascii_lowercase, 6), _pick(rng, _ALNUM, 12)
        basic = base64.b64encode(f"{user}:{word}".encode()).decode()
        yield "basic credentials", f"Authorization: Basic {basic}"
        yield "password in a URL", f"DATABASE_URL=postgres://app:{_pick(rng, _ALNUM + '!*', 14)}@db.internal:5432/app"
        yield "password in a URL", f"redis at redis://default:{_pick(rng, _ALNUM, 20)}@cache:6379"
        yield "password", f"DB_PASSWORD={_pick(rng, _ALNUM, 10)}"
        yield "password", f'"password": "{_pick(rng, string.ascii_lowercase, 6)}{rng.randint(10, 99)}!"'
        yield "password", f"the wifi passphrase: {_pick(rng, string.ascii_lowercase, 5)}{rng.randint(1000, 9999)}"
        yield "secret value", f"SECRET_KEY='{_pick(rng, _ALNUM + '!@#%^&*', 50)}'"
        yield "secret value", f'{{"client_secret": "{_pick(rng, _ALNUM, 32)}"}}'
        yield "secret value", f"api_key: {_pick(rng, _HEX, 32)}{_pick(rng, string.ascii_uppercase, 4)}"
        word = _pick(rng, _ALNUM, 10) + str(rng.randint(0, 9))
        yield "password", f"mysql -u root --password {word} orders"
        yield "password", f"curl -u admin:{word} https://ci.example.com/api"
        yield "password", f"mysqldump -h db.internal -u backup -p{word} orders > orders.sql"
        yield (
            "password",
            f"mysql -u root -p'{_pick(rng, string.ascii_lowercase, 5)} {_pick(rng, string.ascii_lowercase, 7)} 9' app",
        )
        yield "password", f"the wifi password is {word}"
        yield (
            "password",
            f"password: '{_pick(rng, string.ascii_lowercase, 5)} {_pick(rng, string.ascii_lowercase, 6)} horse'",
        )


def near_misses(seed: int = 11) -> Iterator[str]:
    """Ordinary texts no secret is in."""
    rng = random.Random(seed)
    for _ in range(20):
        digest = hashlib.sha1(_pick(rng, _ALNUM, 12).encode()).hexdigest()
        yield f"Fixed in commit {digest}"
        yield f"merge {digest[:7]} onto main"
        yield f"sha256 {hashlib.sha256(_pick(rng, _ALNUM, 12).encode()).hexdigest()} of the release"
        yield f"Request id {uuid.UUID(int=rng.getrandbits(128))}"
        yield f"logo: data:image/png;base64,{base64.b64encode(rng.randbytes(300)).decode()}"
        yield f"order number {rng.randint(10**15, 10**19)}"
        yield f"docs at https://docs.example.com/{_pick(rng, string.ascii_lowercase, 8)}?page=2"
        yield f"ssh to deploy@{_pick(rng, string.ascii_lowercase, 6)}.example.com"
    yield from (
        "Uses scikit-learn (sk-learn) for the classifier",
        "The token limit is 8192 per request",
        "token count: 1234567890123456",
        "Password reset emails are sent by the auth service",
        "The password: must have 12 characters",
        "password: Secret",
        "api_key: ${API_KEY} comes from the environment",
        "SECRET_KEY=os.environ['SECRET_KEY']",
        "token = get_token()",
        "password = changeme",
        "Basic authentication is turned off",
        "bearer of bad news",
        "postgres://localhost:5432/app has no password",
        "postgresql://app:password@localhost/app in the README example",
        "the key-value store keeps sessions",
        "AKIA is the prefix of AWS access key ids",
        "ghp_ tokens are classic GitHub tokens",
        "BEGIN PRIVATE KEY blocks must never be pasted",
        "Her GitHub handle is sk-dev and his is gh_pat",
        "Meeting with the Secret Service on Tuesday",
        "Credentials are rotated every 90 days",
        "eyJ is how a base64 JSON object starts",
        "[redacted: GitHub token] was rotated",
        # Developer text about secrets, not secrets (found by a review of the detector).
        "password = models.CharField(max_length=128)",
        "password: typing.Optional[str]",
        "PASSWORD_FILE=/run/secrets/db_password",
        "PWD=/home/alice/projects/graphmem",
        "pwd = os.getcwd()",
        "password = config.get_password()",
        "token_endpoint: https://oauth2.googleapis.com/token",
        "credentials: ~/.aws/credentials",
        "secretName: tls-cert-production-2024",
        "tokenizer: bert-base-multilingual-cased",
        "open http://localhost:8080?email=john@example.com in the browser",
        "image docker://alpine:3.19@sha256 pinned",
        "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
        "The API uses Bearer authentication/authorization",
        "api_key = settings.OPENAI_API_KEY",
        "token: Optional[str] = None",
        "private_key_path: /etc/ssl/private/server.key",
        "cache key-d41d8cd98f00b204e9800998ecf8427e expired",
        "access_key_id: ${AWS_ACCESS_KEY_ID}",
        "password=%(db_password)s",
        "mysql -h db.internal -P3306 -u app -p orders asks for the password",
        "mysqldump -proot orders",
        "mkdir -p /srv/data/mysql-backups",
        "docker run -d --name mysql -p3306:3306 mysql:8",
        "The mysql box is reachable with ssh -p2222 admin@db1",
        'mysqldump -u "$DB_USER" -p"$DB_PASS" mydb',
        "mysql -u root -p'${MYSQL_ROOT_PASSWORD}' orders",
        "mysql -u root -p<password> orders",
    )
