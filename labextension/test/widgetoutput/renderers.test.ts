import { deadControls, widgetData } from '../../src/widgetoutput/renderers';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';

describe('widgetData', () => {
  it('reads a saved payload defensively: wrong types become empty, missing labels neutral stand-ins', () => {
    const data = widgetData({ model_id: 7, html: '<b>x</b>', buttons: ['Approve', 3, 'Deny'], labels: { gone: 1 } });
    expect(data.modelId).toBe('');
    expect(data.html).toBe('<b>x</b>');
    expect(data.buttons).toEqual(['Approve', 'Deny']);
    expect(data.labels).toEqual({ restarted: 'restarted', gone: 'gone', noKernel: 'no kernel' });
    expect(widgetData(null).buttons).toEqual([]);
  });
});

describe('deadControls', () => {
  const data = widgetData({
    buttons: ['Approve', XSS_IMG],
    labels: { restarted: 'the kernel restarted: run it again' }
  });

  it('draws every button disabled, named as text, with the reason as the line and the hover', () => {
    const [buttons, line] = deadControls(data, 'restarted');
    const drawn = Array.from(buttons.querySelectorAll('button'));
    expect(drawn.map(button => [button.textContent, button.disabled, button.title])).toEqual([
      ['Approve', true, 'the kernel restarted: run it again'],
      [XSS_IMG, true, 'the kernel restarted: run it again']
    ]);
    expect(buttons.querySelector('img')).toBeNull();
    expect(line.textContent).toBe('the kernel restarted: run it again');
  });

  it('has no line while the reason is not known yet', () => {
    const controls = deadControls(data, null);
    expect(controls).toHaveLength(1);
    expect(controls[0].querySelector('button')?.title).toBe('');
  });
});
