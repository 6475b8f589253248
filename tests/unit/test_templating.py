"""The template language: placeholders, fallbacks, reserved names, escaping, declarations."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailbridge.mail.templating import (
    Variable,
    declaration_problems,
    format_value,
    render,
    undeclared_variables,
    used_variables,
    value_problems,
)

CONTACT = {
    "first_name": "Ada",
    "last_name": "Lovelace",
    "email": "ada@corp.io",
    "properties": {"plan": "pro", "seats": 12},
}


def test_a_value_replaces_its_placeholder() -> None:
    assert render("Hi {{{NAME}}}!", {"NAME": "Ada"}) == "Hi Ada!"
    assert render("{{{A}}}{{{B}}}{{{A}}}", {"A": "1", "B": "2"}) == "121"


def test_only_triple_braces_are_placeholders() -> None:
    text = "{{NAME}} {NAME} {{{{NAME}}}} {{{NAME}}"
    assert render(text, {"NAME": "Ada"}) == "{{NAME}} {NAME} {Ada} {{{NAME}}"
    assert used_variables("{{NAME}} and {{{ OTHER }}}") == {"OTHER"}


def test_spaces_inside_the_braces_are_ignored() -> None:
    assert render("{{{ NAME }}}|{{{  NAME|x}}}", {"NAME": "Ada"}) == "Ada|Ada"
    assert render("{{{ NAME | my friend }}}", {}) == "my friend"


def test_a_name_that_is_not_a_variable_name_stays_as_written() -> None:
    text = "{{{two words}}} {{{}}} {{{a.b}}}"
    assert render(text, {"two": "x", "a": "y"}) == text
    assert used_variables(text) == set()


def test_html_escapes_values_and_text_does_not() -> None:
    value = "<b>Tom & \"Jerry\"</b> 'x'"
    assert render("{{{V}}}", {"V": value}, html=True) == (
        "&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;/b&gt; &#x27;x&#x27;"
    )
    assert render("{{{V}}}", {"V": value}, html=False) == value


def test_html_leaves_the_templates_own_markup_alone() -> None:
    assert render("<p>{{{V}}}</p>", {"V": "a<b"}, html=True) == "<p>a&lt;b</p>"


def test_fallback_order_is_given_then_in_place_then_declared_then_empty() -> None:
    declared = [Variable("PLAN", "string", "free"), Variable("SEATS", "number")]
    assert render("{{{PLAN|trial}}}", {"PLAN": "pro"}, declared=declared) == "pro"
    assert render("{{{PLAN|trial}}}", {}, declared=declared) == "trial"
    assert render("{{{PLAN}}}", {}, declared=declared) == "free"
    assert render("{{{PLAN}}}", {"PLAN": None}, declared=declared) == "free"
    assert render("[{{{SEATS}}}]", {}, declared=declared) == "[]"
    assert render("[{{{UNKNOWN}}}]", {}) == "[]"
    assert render("[{{{PLAN|}}}]", {}, declared=declared) == "[]"


def test_an_empty_string_is_a_value_not_a_missing_one() -> None:
    assert render("[{{{PLAN|trial}}}]", {"PLAN": ""}) == "[]"


def test_declared_fallbacks_are_escaped_but_in_place_ones_are_template_source() -> None:
    declared = [Variable("X", "string", "<i>declared</i>")]
    assert render("{{{X}}}", {}, declared=declared, html=True) == "&lt;i&gt;declared&lt;/i&gt;"
    assert render("{{{Y|<i>here</i>}}}", {}, html=True) == "<i>here</i>"


@pytest.mark.parametrize(
    ("value", "text"),
    [(12, "12"), (2.5, "2.5"), (25.0, "25"), (True, "true"), (False, "false"), ("", "")],
)
def test_values_format_as_text(value: Any, text: str) -> None:
    assert render("{{{N}}}", {"N": value}) == text
    assert format_value(value) == text


def test_structured_values_render_as_compact_json() -> None:
    assert render("{{{L}}}", {"L": [1, "a"]}) == '[1,"a"]'
    assert format_value(None) is None


def test_reserved_variables_come_from_reserved_then_contact_then_variables() -> None:
    text = "{{{FIRST_NAME}}} {{{LAST_NAME}}} <{{{EMAIL}}}> {{{UNSUBSCRIBE_URL}}}"
    reserved = {"UNSUBSCRIBE_URL": "https://mb.io/u?a=1&b=2", "FIRST_NAME": "Countess"}
    assert render(text, {}, contact=CONTACT, reserved=reserved) == (
        "Countess Lovelace <ada@corp.io> https://mb.io/u?a=1&b=2"
    )
    assert render(text, {}, contact=CONTACT, reserved=reserved, html=True).endswith(
        "https://mb.io/u?a=1&amp;b=2"
    )
    without_contact = render("{{{FIRST_NAME|there}}}", {"FIRST_NAME": "Bob"})
    assert without_contact == "Bob"
    assert render("Hi {{{FIRST_NAME|there}}}", {}) == "Hi there"


def test_contact_fields_and_properties() -> None:
    text = "{{{contact.first_name}}}/{{{contact.email}}}/{{{contact.plan}}}/{{{contact.seats}}}"
    assert render(text, {}, contact=CONTACT) == "Ada/ada@corp.io/pro/12"
    flat = {"first_name": "Ada", "plan": "team"}
    assert render("{{{contact.first_name}}} {{{contact.plan}}}", {}, contact=flat) == "Ada team"
    assert render("[{{{contact.company|none}}}]", {}, contact=CONTACT) == "[none]"
    assert render("[{{{contact.first_name}}}]", {}, contact=None) == "[]"
    # A send-time variable never impersonates a contact field.
    assert render("[{{{contact.plan}}}]", {"contact.plan": "x"}) == "[]"


def test_contact_values_are_escaped_in_html() -> None:
    contact = {"first_name": "<img src=x onerror=alert(1)>"}
    rendered = render(
        "<p>{{{contact.first_name}}}{{{FIRST_NAME}}}</p>", {}, contact=contact, html=True
    )
    assert "<img" not in rendered and rendered.count("&lt;img") == 2


def test_used_variables_names_every_kind() -> None:
    text = "{{{A}}} {{{ B | x }}} {{{FIRST_NAME}}} {{{contact.plan}}} {{C}}"
    assert used_variables(text) == {"A", "B", "FIRST_NAME", "contact.plan"}
    assert used_variables(None) == set() and used_variables("") == set()


def test_undeclared_variables_ignores_reserved_and_contact_names() -> None:
    declared = [Variable("A")]
    texts = ["{{{A}}} {{{B}}}", None, "{{{EMAIL}}} {{{contact.x}}} {{{UNSUBSCRIBE_URL}}} {{{C|y}}}"]
    assert undeclared_variables(texts, declared) == ["B", "C"]
    assert undeclared_variables(["{{{first_name}}}"], []) == ["first_name"]


@pytest.mark.parametrize(
    ("variables", "fragment"),
    [
        ([Variable("bad-key")], "`bad-key` must be"),
        ([Variable("")], "`` must be"),
        ([Variable("K" * 51)], "must be 1 to 50"),
        ([Variable("FIRST_NAME")], "`FIRST_NAME` is reserved"),
        ([Variable("UNSUBSCRIBE_URL")], "is reserved"),
        ([Variable("contact")], "`contact` is reserved"),
        ([Variable("A"), Variable("A", "number")], "`A` is declared more than once"),
        ([Variable("A", "boolean")], "type `boolean`"),
        ([Variable("A", "string", 3)], "fallback_value of `A` must be a string"),
        ([Variable("A", "number", "3")], "fallback_value of `A` must be a number"),
        ([Variable("A", "number", True)], "must be a number"),
        ([Variable("A", "number", float("nan"))], "must be a number"),
        ([Variable(f"K{i}") for i in range(51)], "at most 50 variables"),
    ],
)
def test_declaration_problems(variables: list[Variable], fragment: str) -> None:
    problems = declaration_problems(variables)
    assert any(fragment in problem for problem in problems), problems


def test_good_declarations_have_no_problems() -> None:
    variables = [
        Variable("first_name", "string", "there"),
        Variable("SEATS", "number", 2.5),
        Variable("ORDER_1", "number"),
        *(Variable(f"K{i}") for i in range(47)),
    ]
    assert declaration_problems(variables) == []


def test_value_problems_for_the_send_pipeline() -> None:
    declared = [Variable("A"), Variable("B", "number", 1), Variable("C", "number")]
    assert value_problems(declared, {"A": "x", "C": 2}) == []
    problems = value_problems(declared, {"B": "many", "C": True})
    assert any("`A` needs a value" in p for p in problems)
    assert any("`B` must be a number" in p for p in problems)
    assert any("`C` must be a number" in p for p in problems)
    assert value_problems([Variable("S")], {"S": {"x": 1}}) == ["Variable `S` must be a string."]


def test_variable_json_round_trip() -> None:
    variable = Variable("SEATS", "number", 3)
    assert Variable.from_json(variable.to_json()) == variable
    assert Variable.from_json({"key": "A"}) == Variable("A", "string", None)


def test_rendering_empty_or_missing_text() -> None:
    assert render(None, {"A": "x"}) == ""
    assert render("", {}) == ""
    assert render("no placeholders", {"A": "x"}) == "no placeholders"


SCRIPT = "<script>alert(1)</script>"


@given(
    before=st.text(max_size=30),
    after=st.text(max_size=30),
    where=st.sampled_from(["variable", "contact", "reserved", "declared"]),
)
def test_html_never_lets_a_script_from_a_value_through(before: str, after: str, where: str) -> None:
    value = before + SCRIPT + after
    template = "<p>{{{V}}}</p><p>{{{contact.note}}}</p><p>{{{UNSUBSCRIBE_URL}}}</p>"
    rendered = render(
        template,
        {"V": value} if where == "variable" else {},
        declared=[Variable("V", "string", value if where == "declared" else None)],
        contact={"note": value} if where == "contact" else None,
        reserved={"UNSUBSCRIBE_URL": value} if where == "reserved" else {},
        html=True,
    )
    assert "<script" not in rendered.lower()
    assert "&lt;script&gt;" in rendered


@given(value=st.text(max_size=60))
def test_html_rendering_of_any_value_contains_no_raw_markup_characters(value: str) -> None:
    rendered = render("{{{V}}}", {"V": value}, html=True)
    assert "<" not in rendered and ">" not in rendered and '"' not in rendered
