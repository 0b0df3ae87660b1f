"""Host modelplane's components for every Pulumi language (pulumi package add provider/)."""
from pulumi.provider.experimental import component_provider_host

from modelplane import __version__
from modelplane.sdk import Fleet

COMPONENTS = [Fleet]

if __name__ == "__main__":
    component_provider_host(components=COMPONENTS, name="modelplane", version=__version__)
