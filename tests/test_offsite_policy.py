"""The site's rounds guard against sending data to hosts the request does not name by
default (POWERON_OFFSITE_APPROVAL), and the setting relaxes it."""

from workflows.execution.setup import policy


def test_offsite_approval_is_on_by_default(settings):
    assert policy([]).offsite_approval is True


def test_the_setting_relaxes_it(settings):
    settings.POWERON_OFFSITE_APPROVAL = False
    assert policy([]).offsite_approval is False
