"""Input components that check what they are sent, by the page or by the API, before any handler runs: one
clear message per kind of mistake (``transformer/params.py``), never Gradio's hidden exception or a silent
coercion. They draw as Gradio's own (``is_template``: the same frontend component). A refusal is the user's
mistake, not the app's: Gradio prints no traceback for it (``print_exception=False``)."""
from __future__ import annotations

import gradio as gr

from transformer import params


NAMES = {"English": "English sentence", "Your French translation": "French translation",
         "…or type a rival piece": "rival piece", "…or type a piece": "piece", "Show": "view"}


def named(label) -> str:
    """What a control is called in a message: its label without the hint in brackets ("decoding step")."""
    name = str(label or "value").split(" (")[0].strip()
    return NAMES.get(name) or name[:1].lower() + name[1:]


class WholeSlider(gr.Slider):
    """A slider of whole numbers (a step, a layer, a width): a value that is not one, or is out of this
    session's range, is refused with a message naming the control; a fraction is not rounded."""

    is_template = True

    def preprocess(self, payload):
        try:
            return params.whole_number(payload, named(self.label), int(self.minimum), int(self.maximum))
        except ValueError as e:
            raise gr.Error(str(e), print_exception=False) from None


class TextInput(gr.Textbox):
    """A text box whose value must be text: a number, a list or an object sent to it is refused (Gradio's own
    box turns anything into its str()); None is empty."""

    is_template = True

    def preprocess(self, payload):
        try:
            return params.text(payload, named(self.label))
        except ValueError as e:
            raise gr.Error(str(e), print_exception=False) from None


def required(control, payload):
    """A choice (radio, dropdown) must be made: None is refused with the choices named (Gradio's own passes
    None on, and refuses only a value that is not a choice)."""
    if payload is None:
        choices = ", ".join(str(value) for _, value in control.choices)
        raise gr.Error(f"The {named(control.label)} must be one of: {choices}; none was given.",
                       print_exception=False)
    return payload


def refused_briefly(preprocess):
    """Gradio's own refusal of a value (not one of the choices, out of range) as the user's mistake: its
    message cut to a readable length (it quotes the whole value: a megabyte sent comes back and fills the
    log), no traceback."""
    try:
        return preprocess()
    except gr.Error as e:
        message = str(e.message)
        raise gr.Error(message if len(message) <= 300 else message[:200] + " … " + message[-80:],
                       print_exception=False) from None


class ChoiceRadio(gr.Radio):
    """Gradio's radio, refusing a value that is not a choice briefly (``refused_briefly``)."""

    is_template = True

    def preprocess(self, payload):
        return refused_briefly(lambda: super(ChoiceRadio, self).preprocess(payload))


class ChoiceDropdown(gr.Dropdown):
    """Gradio's dropdown, refusing a value that is not a choice briefly (``refused_briefly``)."""

    is_template = True

    def preprocess(self, payload):
        return refused_briefly(lambda: super(ChoiceDropdown, self).preprocess(payload))


class RequiredRadio(gr.Radio):
    """A radio whose choice must be made (None refused)."""

    is_template = True

    def preprocess(self, payload):
        return refused_briefly(lambda: super(RequiredRadio, self).preprocess(required(self, payload)))


class RequiredDropdown(gr.Dropdown):
    """A dropdown whose choice must be made (None refused)."""

    is_template = True

    def preprocess(self, payload):
        return refused_briefly(lambda: super(RequiredDropdown, self).preprocess(required(self, payload)))
